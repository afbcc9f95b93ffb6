"""Prompt fingerprints (lib/fingerprints.py): cache-order rendering, hashes, divergence, span shapes."""

import json

import yaml
from hypothesis import given, settings, strategies as st

from pipelines.ingest import fingerprints


def chat(system: str, user: str) -> dict:
    return {"model": "gpt-4.1", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def test_rendering_follows_cache_order_for_each_provider_shape():
    anthropic = {"system": [{"type": "text", "text": "SYS"}], "tools": [{"name": "b"}, {"name": "a"}],
                 "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    gemini = {"systemInstruction": {"parts": [{"text": "SYS"}]}, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    responses = {"instructions": "SYS", "input": "hi"}
    assert fingerprints.render(anthropic) == ("SYS", '[{"name":"b"},{"name":"a"}]', 'SYS[{"name":"b"},{"name":"a"}]hi')
    assert fingerprints.render(gemini)[2] == fingerprints.render(responses)[2] == fingerprints.render(chat("SYS", "hi"))[2] == "SYShi"


def test_openings_are_shared_exactly_as_far_as_the_texts_agree():
    system = "policy " * 300  # 2,100 characters
    a, b = fingerprints.fingerprint(chat(system, "one")), fingerprints.fingerprint(chat(system, "two"))
    assert a.opening_hashes[:4] == b.opening_hashes[:4]  # 256 .. 2,048 characters: inside the system prompt
    assert a.family == b.family and a.system_sha == b.system_sha and a.rendered_chars == 2103


def test_divergence_points_at_the_changing_value_and_describes_it_without_text():
    head, tail = "Rules: be kind. " * 75, " Answer briefly. " * 40
    before = head + "Now: 2026-11-08T10:00:01Z." + tail + "What is my order status?"
    after = head + "Now: 2026-11-08T10:15:42Z." + tail + "Where is my refund?"
    offset, span = fingerprints.divergence(before, after)
    assert offset == len(head) + len("Now: ")
    assert span == "digits and separators, 20 chars: looks like a timestamp"
    assert "2026" not in span
    assert fingerprints.divergence(before, before) == (len(before), "identical")


def test_span_guesses():
    assert fingerprints.describe_span("3f2a9c1e-1b2c-4d5e-8f90-123456789abc").endswith("a request id or hash")
    assert fingerprints.describe_span("Alice") == "letters, 5 chars: looks like a name or word"
    assert fingerprints.describe_span("42") == "digits, 2 chars: looks like a counter or number"


def test_real_cassette_pair_dropped_prefix_versus_stable_wire(shared):
    # pydantic-ai cassettes: the same follow-up sent twice; agui 0.1.10 drops the thinking block from the
    # re-sent conversation (..._drops_prefix) while the stable wire format keeps it (..._wire_stable)
    folder = shared / "data" / "pydantic_ai_cache_cassettes"

    def second_and_third(name):
        interactions = yaml.safe_load((folder / name).read_text())["interactions"]
        return [fingerprints.fingerprint(i["request"]["parsed_body"]) for i in interactions[1:3]]

    dropped = second_and_third("test_anthropic_thinking_agui_0_1_10_drops_prefix.yaml")
    stable = second_and_third("test_anthropic_thinking_roundtrip_wire_stable[vercel].yaml")
    assert stable[0].opening_hashes == stable[1].opening_hashes and stable[0].family == stable[1].family
    assert dropped[0].family != dropped[1].family and dropped[0].rendered_chars != dropped[1].rendered_chars


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab:0 ", max_size=60), st.text(alphabet="ab:0 ", max_size=60), st.text(alphabet="ab", max_size=40))
def test_common_prefix_and_realignment_match_their_definitions(head, tail_a, tail_b):
    # the fast forms (binary search over slices, a set of runs) against the plain definitions, on texts
    # built to share openings and runs
    from pipelines.ingest.fingerprints import RESYNC_RUN, _realign, common_prefix_chars

    previous, current = head + tail_a, head + tail_b + tail_a
    naive_prefix = next((i for i, (x, y) in enumerate(zip(previous, current)) if x != y), min(len(previous), len(current)))
    assert common_prefix_chars(previous, current) == naive_prefix
    block = fingerprints._PREFIX_BLOCK
    try:  # blocks compared whole, then a search inside the first that differs: at every block size
        for fingerprints._PREFIX_BLOCK in (1, 3, 8):
            assert common_prefix_chars(previous, current) == naive_prefix
    finally:
        fingerprints._PREFIX_BLOCK = block
    naive_realign = next((b for b in range(len(current) - RESYNC_RUN + 1) if current[b:b + RESYNC_RUN] in previous),
                         len(current))
    assert _realign(previous, current) == naive_realign


def test_an_inserted_timestamp_is_located_measured_and_named_exactly_inside_a_repetitive_prompt():
    from pipelines.ingest.fingerprints import divergence

    prompt = "You are a helpful support assistant for Acme. " * 40
    offset, description = divergence(prompt, "Current time: 2026-11-20T10:02:02Z. " + prompt)
    assert offset == 0
    assert description == "digits, letters, spaces and separators, 34 chars: looks like a timestamp inside text"


def test_parse_object_reads_as_json_loads_and_locates_each_value():
    import json

    line = ' {"ts" : "x", "request":{"messages":[{"content":"a \\"request\\": {"}]} ,"n":1e2,"d":1,"d":2} '
    record, spans = fingerprints.parse_object(line)
    assert record == json.loads(line)
    assert line[slice(*spans["request"])] == '{"messages":[{"content":"a \\"request\\": {"}]}'
    assert line[slice(*spans["n"])] == "1e2" and "d" not in spans  # a key given twice has no span
    for bad in ('{"a":1,}', '{"a":1} x', '[1]', '{"a" 1}', '{"a":1 "b":2}'):
        assert fingerprints.parse_object(bad) is None


def request_lines() -> list[str]:
    """Envelopes with request bodies of each provider shape, and the cases the cut must leave whole."""
    import json

    usage = {"prompt_tokens": 1300, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 1024}}
    chat_body = {"model": "gpt-4.1", "messages": [{"role": "system", "content": "Rules. " * 300},
                                                  {"role": "user", "content": 'say "request": {} é \u2028'}]}

    def envelope(n, request, response=None, **extra):
        return {"ts": f"2026-11-20T10:00:{n:02d}Z", "provider": "openai", "model": "gpt-4.1", "app": "a",
                "request_id": f"r{n}", **extra, "request": request,
                "response": response or {"id": f"r{n}", "object": "chat.completion", "usage": usage}}

    lines = [json.dumps(envelope(0, chat_body)),
             json.dumps(envelope(1, {**chat_body, "prompt_cache_key": "tenant-key-1"})),
             json.dumps(envelope(2, {**chat_body, "prompt_cache_key": 7})).replace('"prompt_cache_key": 7', '"prompt_cache_key": 7E1'),
             json.dumps(envelope(3, {**chat_body, "prompt_cache_key": "k3"})).replace("prompt_cache_key", "prompt\\u005fcache_key"),
             json.dumps(envelope(4, {**chat_body, "tools": [{"name": "error", "parameters": {"error": {}}}]},
                                 {"id": "r4", "object": "chat.completion", "usage": {**usage, "prompt_tokens": "12"}})),
             json.dumps(envelope(5, chat_body, {"id": "r5", "object": "chat.completion", "usage": {**usage, "prompt_tokens": -3}})),
             json.dumps(envelope(6, {**chat_body, "temperature": float("nan")})),  # NaN: both readers take it
             json.dumps(envelope(7, {**chat_body, "seed": 1e300})).replace("1e+300", "1e999"),
             json.dumps(envelope(14, {**chat_body, "user": "x\ud800y"})),  # an unpaired surrogate: malformed for DuckDB
             json.dumps(envelope(8, "a request that is text")),
             json.dumps(envelope(9, chat_body))[:-1] + ', "request": {"prompt_cache_key": "second"}}',  # request twice
             json.dumps(envelope(10, {"system": [{"type": "text", "text": "Anthropic rules. " * 200}],
                                      "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
                                 {"id": "m10", "type": "message", "model": "claude-sonnet-4-5",
                                  "usage": {"input_tokens": 900, "output_tokens": 5, "cache_read_input_tokens": 0,
                                            "cache_creation_input_tokens": 0}}, provider="anthropic", model="claude-sonnet-4-5"),
                        indent=1),
             json.dumps(envelope(11, {"contents": [{"role": "user", "parts": [{"text": "Gemini prompt " * 100}]}]},
                                 {"responseId": "g11", "modelVersion": "gemini-2.5-flash",
                                  "usageMetadata": {"promptTokenCount": 400, "candidatesTokenCount": 3}},
                                 provider="gemini", model="gemini-2.5-flash")).replace(": ", " :  "),
             '{"ts": "2026-11-20T10:00:12Z", "request": {"messages": [}, "response": {}}',  # malformed
             ]
    return [line.replace("\n", " ") for line in lines]


def test_cutting_request_bodies_leaves_every_staged_and_quarantined_row_as_the_whole_lines_give(tmp_path, monkeypatch):
    from pipelines.ingest import stage as ingest
    from pipelines.lib import warehouse

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "bodies.jsonl").write_text("\n".join(request_lines()) + "\n")
    cut = []
    real_cut = fingerprints.without_request_body
    monkeypatch.setattr(fingerprints, "without_request_body",
                        lambda *args: cut.append(real_cut(*args)) or cut[-1])

    def staged(name, fast_lane=False):  # the general normaliser reads every line, so every body is cut
        conn = warehouse.connect(tmp_path / f"{name}.duckdb")
        ingest.stage_logs(conn, logs, fast_lane=fast_lane)
        usage = conn.execute("select * from core.usage order by source_line").fetchall()
        quarantine = conn.execute("select source_file, source_line, source_format, reason, raw_excerpt, * exclude "
                                  "(source_file, source_line, source_format, reason, raw_excerpt, quarantined_at) "
                                  "from core.quarantine order by source_line").fetchall()
        files = conn.execute("select rows_in, rows_accepted, rows_quarantined from stage.files").fetchall()
        conn.close()
        return usage, quarantine, files

    with_cut = staged("cut")
    assert sum(c is not None for c in cut) == 9  # records 0-3, 5-7, 10 and 11; the others are kept whole
    cut.clear()
    in_lane = staged("lane", fast_lane=True)  # the lane takes the clean lines whole; only what it defers is cut
    assert sum(c is not None for c in cut) == 2
    monkeypatch.setattr(fingerprints, "without_request_body", lambda *args: None)
    whole = staged("whole")
    assert with_cut == whole
    assert in_lane == whole
    usage, quarantine, files = whole
    assert files == [(14, 10, 4)] and len(usage) == 10
    # a string count, a negative count (its request cut) and the malformed line; the excerpt of the record
    # whose tools name "error" carries the error object, as from its whole line
    assert [(row[1], row[3].split(":")[0], '"error":{"code":null' in row[4]) for row in quarantine] == [
        (5, "prompt tokens is a string, not a number (\"12\")", True), (6, "negative token count", False),
        (9, "malformed JSON", False), (14, "malformed JSON", False)]


def test_a_request_of_odd_shapes_renders_and_stages_without_stopping_the_run(tmp_path):
    """A logged body whose keys hold other shapes than a provider sends (a toolConfig string, messages as
    an object, a message without content) is rendered from what it has; the run does not stop on it."""
    from pipelines.ingest import stage as ingest
    from pipelines.lib import warehouse

    odd = {"toolConfig": "auto", "messages": [{"role": "system", "content": "SYS"}, {"role": "user"}, "hi"]}
    assert fingerprints.render(odd) == ("SYS", "", "SYShi")
    assert fingerprints.render({"toolConfig": ["a"], "messages": {"role": "user"}}) == ("", "", "")
    logs = tmp_path / "logs"
    logs.mkdir()
    response = {"id": "r1", "model": "gpt-4.1", "usage": {"prompt_tokens": 1200, "completion_tokens": 5,
                                                           "prompt_tokens_details": {"cached_tokens": 1024}}}
    envelope = {"ts": "2026-11-20T10:00:00Z", "provider": "openai", "request": odd, "response": response}
    # the second names its tenant with an object: no series to measure a divergence in, so no fingerprint
    (logs / "odd.jsonl").write_text(json.dumps(envelope) + "\n" + json.dumps(
        {**envelope, "tenant": {"id": 7}, "response": {**response, "id": "r2"}}) + "\n")
    conn = warehouse.connect(tmp_path / "w.duckdb")
    ingest.stage_logs(conn, logs)
    assert conn.execute("select prompt_tokens, cache_read_tokens, rendered_chars, system_sha is not null, tools_sha "
                        "from core.usage order by source_line").fetchall() == [(1200, 1024, 5, True, None),
                                                                               (1200, 1024, None, False, None)]
    assert conn.execute("select rows_in, rows_accepted, rows_quarantined from stage.files").fetchall() == [(2, 2, 0)]
    conn.close()



def staged_prints(db, logs) -> list[tuple]:
    """Stage ``logs`` into a new warehouse at ``db``; core.usage's fingerprint columns, by line."""
    from pipelines.ingest import stage as ingest
    from pipelines.lib import warehouse

    conn = warehouse.connect(db)
    ingest.stage_logs(conn, logs)
    rows = conn.execute("select source_line, prefix_family, system_sha, tools_sha, opening_hashes, rendered_chars, "
                        "divergence_offset_chars, divergence_span from core.usage order by source_line").fetchall()
    conn.close()
    return rows

def test_fingerprints_gathered_over_several_inserts_give_the_rows_one_insert_gives(tmp_path, monkeypatch):
    """Staging inserts fingerprint rows every PRINTS_ROWS rows (and at the end); how they are grouped changes no row,
    tools or system hashes that are null in one group and set in another included (PRINTS_SCHEMA types them)."""
    from pipelines.ingest import stage as ingest

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "bodies.jsonl").write_text("\n".join(request_lines()) + "\n")

    at_once = staged_prints(tmp_path / "once.duckdb", logs)
    # blocks of 64 bytes: lines are read again one or two at a time, the rows of a few chunks inserted together
    count_lines = ingest.count_lines
    monkeypatch.setattr(ingest, "count_lines", lambda path, **kw: count_lines(path, block_bytes=64, **kw))
    monkeypatch.setattr(ingest, "PRINTS_ROWS", 4)
    inserts = []
    register_and_run = ingest._register_and_run
    monkeypatch.setattr(ingest, "_register_and_run",
                        lambda conn, name, *rest: inserts.append(name) or register_and_run(conn, name, *rest))
    one_by_one = staged_prints(tmp_path / "each.duckdb", logs)
    assert inserts.count("fingerprints_in") >= 2
    assert one_by_one == at_once
    assert sum(row[2] is not None for row in at_once) >= 5 and any(row[3] is None for row in at_once)


def test_a_request_key_written_with_escapes_is_fingerprinted_in_the_lane_and_out_of_it(tmp_path):
    """JSON readers decode keys, so "requ\\u0065st" is the key "request": DuckDB's lane takes such a line as logging a
    body, and a line the lane defers (here for its reported cost) or a file it does not read (here for a blank line)
    is fingerprinted the same, not left without one because its text lacks the literal key."""
    body = {"id": "c1", "object": "chat.completion", "model": "gpt-4.1",
            "usage": {"prompt_tokens": 2000, "completion_tokens": 10}}
    request = {"messages": [{"role": "system", "content": "You are terse. " * 80}, {"role": "user", "content": "hi"}]}
    envelopes = [{"ts": "2026-10-01T00:00:00Z", "request_id": f"r{i}", "request": request, "response": body, **extra}
                 for i, extra in enumerate([{}, {"reported_cost_usd": 0.01}])]
    lines = [json.dumps(envelope).replace('"request":', '"requ\\u0065st":') for envelope in envelopes]

    def prints(name, text):
        logs = tmp_path / name
        logs.mkdir()
        (logs / "a.jsonl").write_text(text, encoding="utf-8")
        return staged_prints(tmp_path / f"{name}.duckdb", logs)

    in_lane = prints("lane", "\n".join(lines) + "\n")
    general = prints("general", "\n\n".join(lines) + "\n")  # a blank line: the general reader takes the file
    # 80 x 15 characters of system prompt and "hi": 1,202 rendered, three openings (256, 512, 1024)
    assert [(r[1][:3], r[5], len(r[4])) for r in in_lane] == [("fp:", 1202, 3)] * 2
    assert [r[1:] for r in in_lane] == [r[1:] for r in general]
