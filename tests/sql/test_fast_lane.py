"""The fast lane (sql/ingest/fast_items__read_jsonl.sql) against the general normaliser.

Every file is staged twice, once with the fast lane and once with every record through the general
normaliser; staged rows, quarantined rows and the row accounting must be identical. The corpus mixes
clean records of the five fast-lane formats with mutations aimed at each of its checks (strings, floats,
negatives and nulls for counts, escaped or non-string text, shape keys of other formats, costs, request
bodies, timestamps of every kind), malformed lines, real provider bodies from the shared cassettes, and
every JSONL example in fixtures/.
"""

import gzip
import json
import random
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from pipelines.lib.sql import statement
from tests.sql.test_ingest_normalise import cassette_generations

REPO = Path(__file__).resolve().parents[2]
USAGE_COLUMNS = ("request_id, ts, day, source_format, provider, model, tenant, app, request_count, is_batch, service_tier, "
                 "prefix_family, prompt_tokens, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens, "
                 "cache_write_1h_tokens, output_tokens, reasoning_tokens, source_file, source_line, source_item, "
                 "reported_cost_usd, tier_prompt_tokens, latency_ms, ttft_ms, latency_issue, usage_issue, unmapped_usage, "
                 # a logged request body's fingerprint (the lane takes its line, Python fingerprints it)
                 "system_sha, tools_sha, opening_hashes, rendered_chars, divergence_offset_chars, divergence_span, "
                 "inference_geo, speed")  # where and how fast inference ran (Anthropic usage.inference_geo, usage.speed)
QUARANTINE_COLUMNS = "source_file, source_line, source_item, source_format, reason, raw_excerpt"


def bodies(rng: random.Random) -> dict[str, dict]:
    """One clean body of each fast-lane format (counts drawn from rng)."""
    prompt, cached, out = rng.randint(1100, 9000), rng.choice([0, 1024, 2048]), rng.randint(1, 900)
    written = rng.choice([0, 1200])
    return {
        "openai_chat": {"id": f"chatcmpl-{rng.random()}", "object": "chat.completion", "created": 1790000000, "model": "gpt-4.1",
                        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                                  "prompt_tokens_details": {"cached_tokens": cached},
                                  "completion_tokens_details": {"reasoning_tokens": out // 2}}},
        "openai_responses": {"id": f"resp_{rng.random()}", "object": "response", "created_at": 1790000000, "model": "gpt-5-mini",
                             "service_tier": "default",
                             "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
                                       "output_tokens": out, "output_tokens_details": {"reasoning_tokens": out // 3}}},
        "anthropic_messages": {"id": f"msg_{rng.random()}", "type": "message", "model": "claude-sonnet-4-5",
                               "usage": {"input_tokens": prompt - cached - written, "cache_read_input_tokens": cached,
                                         "cache_creation_input_tokens": written, "output_tokens": out,
                                         "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0}}},
        "gemini_generate_content": {"responseId": f"g{rng.random()}", "modelVersion": "gemini-2.5-flash",
                                    "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": cached,
                                                      "candidatesTokenCount": out, "thoughtsTokenCount": 12}},
        "bedrock_converse": {"output": {}, "stopReason": "end_turn", "metrics": {"latencyMs": rng.randint(90, 9000)},
                             "usage": {"inputTokens": prompt - cached, "cacheReadInputTokens": cached,
                                       "cacheWriteInputTokens": 0, "outputTokens": out}},
    }


BAD_VALUES = ["12", 12.0, 12.5, -3, 1e3, 10**13, 10**20, True, None, [1], {"a": 1}, "", "a\\b", "é", 0]


def mutate(rng: random.Random, record: dict) -> None:
    """Change one thing the fast lane checks (in place)."""
    body = record.get("response")
    if not isinstance(body, dict):
        return
    usage = body.get("usage") or body.get("usageMetadata") or {}
    if not isinstance(usage, dict):
        usage = {}
    choice = rng.randrange(27)
    if choice == 0 and usage:  # a count of another type or size
        usage[rng.choice(sorted(usage))] = rng.choice(BAD_VALUES)
    elif choice == 1:
        body[rng.choice(["stream_error", "hash_ids", "otel_span", "span_attributes", "input", "meta_info", "spend",
                         "usageDetails", "usage_metadata", "providerMetadata", "num_model_requests", "uncached_input_tokens",
                         "input_uncached_tokens", "_stream", "usageMetadata"])] = rng.choice([None, {}, 1, "x", True])
    elif choice == 2 and isinstance(body.get("usage"), dict):
        body["usage"][rng.choice(["inputTokens", "prompt_cache_hit_tokens", "billed_units", "promptTokens", "prompt_tokens",
                                  "input_tokens", "input_tokens_details", "cache_read_input_tokens",
                                  "cache_creation_input_tokens", "cost", "is_byok", "cost_details"])] = rng.choice(
            [None, 5, {}, "x", 0.001])
    elif choice == 3:
        record[rng.choice(["ts", "provider", "model", "tenant", "app", "request_id", "id", "prefix_hash"])] = rng.choice(BAD_VALUES)
    elif choice == 4:
        record["ts"] = rng.choice([1790000000, 1790000000.5, "2026-10-01T10:00:00+02:00", "yesterday", "1999-12-31T00:00:00Z",
                                   "2031-01-01T00:00:00Z", -5, "2026-10-01", None])
    elif choice == 5:
        record.pop("ts", None)
    elif choice == 6:
        record[rng.choice(["custom_id", "spend", "reported_cost_usd", "request", "object", "data", "results",
                           "stream_events", "response_sse", "starting_at", "meta", "has_more", "resourceSpans"])] = rng.choice(
            [None, "x", 0.5, {"prompt_cache_key": "k"}, [], {}])
    elif choice == 7:
        record["provider"] = rng.choice(["OpenAI", "azure", "vertex_ai", "made-up", "xai", "openrouter", None])
        record.pop("model", None)
    elif choice == 8:
        body["model"] = rng.choice(["grok-4", "openai/gpt-4.1", "prod-chat", "claude-x", "mistral-large", 7, None])
        body["provider"] = rng.choice(["OpenAI", 3, None])
        record.pop("provider", None)
        record.pop("model", None)
    elif choice == 9:
        body["object"] = rng.choice(["response", "chat.completion", "respons\\u0065", "organization.usage.completions.result", 5])
    elif choice == 10:
        body["type"] = rng.choice(["message", "mess\\u0061ge", None, 3])
    elif choice == 11 and isinstance(body.get("usage"), dict):
        body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 10**6}
        body["usage"]["output_tokens_details"] = {"reasoning_tokens": 10**6, "thinking_tokens": 10**6}
    elif choice == 12 and isinstance(body.get("usage"), dict):
        body["usage"]["cache_creation"] = {"ephemeral_5m_input_tokens": 7, "ephemeral_1h_input_tokens": rng.choice([0, 3, None])}
    elif choice == 13:
        record["response"] = rng.choice(["text", None, [body], 5])
    elif choice == 14 and isinstance(body.get("usage"), dict):
        body["usage"]["prompt_tokens_details"] = rng.choice([None, {"cached_tokens": None}, {"cache_write_tokens": 10},
                                                             {"cache_creation_tokens": 5, "cached_tokens": 1}])
    elif choice == 15:
        record["prefix_hash"] = rng.choice(["fam-a", "fam-b", ""])
    elif choice == 16:
        record["request_id"] = rng.choice(["dup-1", "dup-1", "dup-2"])  # duplicates across the file
    elif choice == 17:
        body.pop("usage", None)
        body.pop("usageMetadata", None)
    elif choice == 18:
        record["tenant"] = rng.choice(["ténant", "t\u0000", "t\"q"])
    elif choice == 19 and isinstance(body.get("usageMetadata"), dict):
        body["usageMetadata"]["promptTokenCount"] = 1
        body["usageMetadata"]["cachedContentTokenCount"] = 5
    elif choice == 20:
        body["created"] = rng.choice(["1790000000", 1790000000.0, None, 10**15])
        body["created_at"] = body["created"]
        record.pop("ts", None)
    elif choice == 21:
        body["createTime"] = rng.choice(["2026-10-01T01:02:03.5Z", "bad", 5])
        record.pop("ts", None)
    elif choice == 22:
        body["service_tier"] = rng.choice(["flex", "priority", 3, None])
    elif choice == 23:  # a latency of another type or size (never a reason to reject the row)
        body["metrics"] = rng.choice([{"latencyMs": rng.choice(BAD_VALUES)}, {}, None, "fast", {"latencyMs": 0}])
    elif choice == 24 and isinstance(body.get("usage"), dict):  # where inference ran (Anthropic: priced 1.1x for "us")
        body["usage"]["inference_geo"] = rng.choice(["us", "global", "US", "u\\u0073", 5, None, ""])
    elif choice == 25 and isinstance(body.get("usage"), dict):  # the speed it ran at (Anthropic fast mode: 2x or 6x)
        body["usage"]["speed"] = rng.choice(["fast", "standard", "FAST", 3, None, "f\\u0061st"])
    else:
        record["model"] = rng.choice(["gpt-4o-2024-11-20", "prod-chat", "gemini-2.5-pro"])


def logged_request(rng: random.Random, i: int) -> dict:
    """A logged request body: a system prompt that is stable, or rotates a timestamp at character 600, a tools list,
    a user turn; sometimes an explicit prompt_cache_key (OpenAI), of a kind the lane reads or defers."""
    system = ("You are a support assistant. " * 30)[:600]
    if rng.random() < 0.4:
        system += f"Now: 2026-10-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z. "
    system += "Answer briefly and politely. " * 20
    request = {"model": "gpt-4.1", "messages": [{"role": "system", "content": system},
                                                {"role": "user", "content": f"question {rng.randint(1, 5)}"}],
               "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]}
    roll = rng.random()
    if roll < 0.2:
        request["prompt_cache_key"] = rng.choice(["support-v1", "", 5, None, "caf\u00e9", {"k": 1}])
    elif roll < 0.25:
        request["error"] = "an error word inside the body"
    return request


def corpus(seed: int, n: int) -> list[str]:
    """n JSONL lines: clean fast-lane records, mutated ones, and a few lines that are not records at all; about a
    third log their request body (drawn from a second generator, so the rest of the corpus is as before)."""
    rng = random.Random(seed)
    body_rng = random.Random(seed * 7919)
    lines = []
    for i in range(n):
        fmt, body = rng.choice(sorted(bodies(rng).items()))
        record = {"ts": "2026-10-01T00:00:00Z", "provider": {"bedrock_converse": "bedrock"}.get(fmt, rng.choice([None, None, "openai"])),
                  "model": "us.anthropic.claude-sonnet-4-5-20250929-v1:0" if fmt == "bedrock_converse" else None,
                  "tenant": f"t{i % 3}", "app": "chat", "request_id": f"r-{seed}-{i}", "response": body}
        if fmt != "bedrock_converse" and record["provider"] == "openai" and fmt not in ("openai_chat", "openai_responses"):
            record["provider"] = None
        record = {k: v for k, v in record.items() if v is not None}
        if body_rng.random() < 0.35:
            record["request"] = logged_request(body_rng, i)
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            mutate(rng, record)
        text = json.dumps(record, ensure_ascii=rng.random() < 0.5).replace("\\\\u", "\\u")
        roll = rng.random()
        if roll < 0.02:
            text = text[: len(text) // 2]  # cut short
        elif roll < 0.03:
            text = "[" + text + "]"
        lines.append(text)
    return lines


def staged(tmp_path: Path, logs: Path, fast_lane: bool, name: str):
    conn = warehouse.connect(tmp_path / f"{name}.duckdb")
    results = ingest.stage_logs(conn, logs, fast_lane=fast_lane, latest=datetime(2030, 1, 1, tzinfo=timezone.utc))
    usage = conn.execute(f"select {USAGE_COLUMNS} from core.usage order by source_file, source_line, source_item").fetchall()
    quarantine = conn.execute(f"select {QUARANTINE_COLUMNS} from core.quarantine order by all").fetchall()
    conn.close()
    return [(r.source_file, r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results], usage, quarantine


def lane_params(log) -> dict:
    """The fast lane's parameters for a log without source.yaml defaults."""
    return {name: None for name in ingest.FAST_LANE_PARAMS} | {
        "deployment_names": [], "deployment_models": [], "earliest": "2000-01-01", "latest": "2030-01-01",
        "source_file": log.relative}


def lane_deferred(conn, log) -> list[int] | None:
    """The line numbers the fast lane defers to the general normaliser (None: the lane does not apply)."""
    again = ingest._fast_lane(conn, log, lane_params(log))
    return None if again is None else again.filter(again["deferred"])["number"].to_pylist()


def assert_same(tmp_path: Path, logs: Path) -> tuple[list, list]:
    fast = staged(tmp_path, logs, True, "fast")
    general = staged(tmp_path, logs, False, "general")
    assert fast[0] == general[0]
    for a, b in zip(fast[1], general[1]):
        assert a == b
    assert len(fast[1]) == len(general[1])
    assert fast[2] == general[2]
    return fast[1], fast[2]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mutated_records_stage_exactly_as_the_general_normaliser_stages_them(tmp_path, seed):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "mixed.jsonl").write_text("\n".join(corpus(seed, 1500)) + "\n", encoding="utf-8")
    usage, quarantine = assert_same(tmp_path, logs)
    # the corpus exercises both outcomes in quantity
    assert len(usage) > 700 and len(quarantine) > 100, (len(usage), len(quarantine))


def test_the_fast_lane_takes_the_clean_records_and_defers_the_rest(tmp_path):
    from pipelines.ingest.discover import discover
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = corpus(7, 400)
    (logs / "mixed.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    conn = warehouse.connect(tmp_path / "w.duckdb")
    log = discover(logs)[0]
    deferred = lane_deferred(conn, log)
    accepted = conn.execute("select count(*) from fast_items where accepted").fetchall()[0][0]
    assert deferred is not None and accepted + len(deferred) == 400
    assert 150 < accepted < 350, accepted  # about half the corpus is clean, the rest mutated or broken


def test_objects_with_a_repeated_key_take_its_first_value_in_both_normalisers(tmp_path):
    # RFC 8259 leaves a repeated key's meaning open: DuckDB's typed reader (under ignore_errors) and its
    # JSON functions both take the first occurrence, so the fast lane gives such a line the values the
    # general normaliser gives it
    from pipelines.ingest.discover import discover
    logs = tmp_path / "logs"
    logs.mkdir()
    body = bodies(random.Random(5))["openai_chat"]
    clean = json.dumps({"ts": "2026-10-01T00:00:00Z", "request_id": "clean", "response": body})
    repeated = [
        clean.replace('"request_id": "clean"', '"request_id": "first", "request_id": "second"'),
        clean.replace('"request_id": "clean"', '"request_id": "model-twice"').replace('"model": "gpt-4.1"',
                                                                                    '"model": "gpt-4.1", "model": "gpt-4o"'),
        clean.replace('"request_id": "clean"', '"request_id": "count-twice"').replace(
            '"completion_tokens"', '"prompt_tokens": 7, "completion_tokens"'),
    ]
    assert all(line.count('"request_id"') + line.count('"model"') + line.count('"prompt_tokens"') == 4 for line in repeated)
    (logs / "repeated.jsonl").write_text("\n".join([clean, *repeated]) + "\n", encoding="utf-8")
    conn = warehouse.connect(tmp_path / "w.duckdb")
    log = discover(logs)[0]
    # every line taken but the one repeating a usage key: the lane counts a usage object's keys against the
    # declared ones present (an undeclared key defers), so a repeated one defers too, to the same values
    assert lane_deferred(conn, log) == [4]
    conn.close()
    usage, quarantine = assert_same(tmp_path, logs)
    prompt = body["usage"]["prompt_tokens"]
    assert [(row[0], row[5], row[12]) for row in usage] == [
        ("clean", "gpt-4.1", prompt), ("first", "gpt-4.1", prompt), ("model-twice", "gpt-4.1", prompt),
        ("count-twice", "gpt-4.1", prompt)]
    assert quarantine == []


def test_files_with_blank_lines_a_bom_or_crlf_endings_are_staged_identically(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = corpus(11, 60)
    (logs / "blank.jsonl").write_text("\n".join(lines[:30]) + "\n\n   \n" + "\n".join(lines[30:]), encoding="utf-8")
    (logs / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    (logs / "no_final_newline.jsonl").write_text("\n".join(lines[:5]), encoding="utf-8")
    (logs / "bad_utf8.jsonl").write_bytes(lines[0].encode() + b"\n" + lines[1].encode()[:-2] + b"\xff\"}\n" + lines[2].encode())
    (logs / "empty.jsonl").write_text("")
    assert_same(tmp_path, logs)


def test_gzip_files_take_the_fast_lane_and_stage_identically(tmp_path):
    from pipelines.ingest.discover import discover
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = corpus(5, 600)
    data = gzip.compress(("\n".join(lines[:500]) + "\n").encode())
    (logs / "clean.jsonl.gz").write_bytes(data)
    (logs / "blank.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines[500:540]) + "\n\n" + "\n".join(lines[540:])).encode()))
    usage, quarantine = assert_same(tmp_path, logs)
    assert len(usage) > 200 and len(quarantine) > 30, (len(usage), len(quarantine))
    conn = warehouse.connect(tmp_path / "lane.duckdb")
    conn.execute(statement("ingest/file_rows__create"))  # stage_file creates it before the lane runs
    found = {log.relative: log for log in discover(logs)}
    deferred = lane_deferred(conn, found["clean.jsonl.gz"])
    accepted = conn.execute("select count(*) from fast_items where accepted").fetchall()[0][0]
    assert deferred is not None and accepted + len(deferred) == 500 and accepted > 150
    assert ingest._fast_lane(conn, found["blank.jsonl.gz"], lane_params(found["blank.jsonl.gz"])) is None  # blank line: the general reader
    # a stream cut short: the general reader keeps the lines before the cut and quarantines the tail
    (logs / "blank.jsonl.gz").unlink()
    (logs / "clean.jsonl.gz").write_bytes(data[:len(data) // 2])
    assert ingest._fast_lane(conn, discover(logs)[0], lane_params(discover(logs)[0])) is None
    assert_same(tmp_path / "cut", logs)


def test_real_provider_bodies_and_every_jsonl_example_stage_identically(tmp_path, shared):
    logs = tmp_path / "logs"
    logs.mkdir()
    envelopes = [{"ts": "2026-10-01T00:00:00Z", "provider": provider, **({"model": model} if model else {}), "response": body}
                 for _, provider, model, body in cassette_generations(shared)]
    (logs / "cassettes.jsonl").write_text("\n".join(json.dumps(e) for e in envelopes) + "\n")
    for folder in (REPO / "fixtures" / "formats", REPO / "fixtures" / "bad"):
        # the envelopes: every other example is a shape the fast lane defers whole (the corpus tests above cover that)
        for path in (p for p in folder.rglob("*.jsonl") if '"response"' in p.read_text(errors="replace")):
            target = logs / folder.name / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    for path in (folder for folder in (REPO / "fixtures" / "formats").rglob("source.yaml")):
        target = logs / "formats" / path.relative_to(REPO / "fixtures" / "formats")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    usage, _ = assert_same(tmp_path, logs)
    assert sum(1 for row in usage if row[19] == "cassettes.jsonl") == len(envelopes)


@pytest.mark.parametrize("content, lines", [
    (b"", 0), (b"{}", 1), (b"{}\n", 1), (b"\n", 1), (b"a\r\nb\r\n", 2), (b"a\n\nb", 3), (b"a\nb\nc\n", 3),
])
def test_count_lines_counts_newlines_and_a_last_line_without_one(tmp_path, content, lines):
    path = tmp_path / "f.jsonl"
    path.write_bytes(content)
    # block sizes of 1 and 2 bytes put a block boundary inside and beside every newline
    assert [ingest.count_lines(path, block) for block in (1, 2, 1 << 20)] == [lines] * 3


def test_count_lines_agrees_with_python_on_a_large_random_file(tmp_path):
    rng = random.Random(7)
    text = "".join(rng.choice("ab\n\r{}") for _ in range(300_000))
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    with path.open("rb") as handle:  # binary line iteration splits on b"\n" only, as JSONL does
        expected = sum(1 for _ in handle)
    assert expected > 40_000 and ingest.count_lines(path, 4096) == expected


def test_the_lines_of_a_range_are_those_the_block_reader_gives_or_none(tmp_path):
    """readers.lines_of_range (a worker's read of a range of lane lines) gives the lines read_line_ranges gives, byte-order
    mark and CRs removed, whatever their characters; it raises RangeUnreadable where the block reader would report an
    unreadable line, wanted or not, or where a number lies past the range's lines (the parent then reads the range)."""
    from pipelines.ingest import readers

    texts = ['{"a": 1}', '{"b": "caf\u00e9 \u03a9 \U0001d7d8"}\r', "", '{"c": [1, 2]}\r\r', '{"d": "\u2028"}']
    data = b"\xef\xbb\xbf" + "\n".join(texts).encode()  # no newline after the last line
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    found: list = []
    expected = {number: line for table in readers.read_line_ranges(path, [(0, len(data), 1)], found)
                for number, line in zip(table["source_line"].to_pylist(), table["line"].to_pylist())}
    assert not found and sorted(expected) == [1, 2, 4, 5]
    assert list(readers.lines_of_range(path, 0, len(data), 1, [1, 2, 4, 5])) == [expected[n] for n in (1, 2, 4, 5)]
    second = data.index(b"\n") + 1  # a range from the second line on: no byte-order mark to remove
    assert list(readers.lines_of_range(path, second, len(data), 2, [4])) == [expected[4]]
    third = data.index(b"\n", second) + 1
    assert list(readers.lines_of_range(path, second, third, 2, [2])) == [expected[2]]  # one line's range
    with pytest.raises(readers.RangeUnreadable, match="line 6 is past"):
        list(readers.lines_of_range(path, second, len(data), 2, [4, 6]))
    path.write_bytes(data.replace(b"[1, 2]", b"[1, \xff]"))  # a byte that is not UTF-8, in a line not wanted
    with pytest.raises(readers.RangeUnreadable, match="line 4 is not UTF-8"):
        list(readers.lines_of_range(path, 0, len(data), 1, [1]))
    list(readers.read_line_ranges(path, [(0, len(data), 1)], found))
    assert [item.source_line for item in found] == [4]


def test_a_deferred_line_is_read_again_from_its_block_not_the_whole_file(tmp_path, monkeypatch):
    """The lane's line count notes where each block's lines start, so the general normaliser reads again only
    the blocks that hold a deferred line (4 KB blocks here; a line longer than a block included), and the
    rows are those of the general normaliser alone."""
    rng = random.Random(5)
    records = []
    for i in range(900):
        fmt, body = rng.choice(sorted(bodies(rng).items()))
        record = {"ts": "2026-10-01T00:00:00Z", "tenant": "t", "app": "chat", "request_id": f"r-{i}", "response": body}
        if fmt == "bedrock_converse":
            record.update(provider="bedrock", model="us.anthropic.claude-sonnet-4-5-20250929-v1:0")
            body["output"] = {"text": "x" * (9000 if i == 450 else 10)}  # line 451 spans three blocks
        if i in (0, 451, 899):  # deferred: a count that is text (the general normaliser rejects it)
            usage = body.get("usage") or body["usageMetadata"]
            usage[next(k for k in ("completion_tokens", "output_tokens", "outputTokens", "candidatesTokenCount") if k in usage)] = "12"
        records.append(json.dumps(record))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "day.jsonl").write_text("\r\n".join(records) + "\n", encoding="utf-8")
    reread: list = []
    real_count, real_ranges = ingest.count_lines, ingest.read_line_ranges
    monkeypatch.setattr(ingest, "count_lines",
                        lambda path, block_bytes=0, starts=None, **kw: real_count(path, 4096, starts, **kw))
    monkeypatch.setattr(ingest, "read_line_ranges", lambda path, ranges, found: real_ranges(path, reread.extend(ranges) or ranges, found))
    monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0)
    usage, quarantine = assert_same(tmp_path, logs)
    assert {row[1] for row in quarantine if 'is a string, not a number ("12")' in row[4]} == {1, 452, 900}
    assert len(usage) + len(quarantine) == 900
    size = (logs / "day.jsonl").stat().st_size
    # the blocks holding the lane's deferred lines (the three above and the records it leaves to the general
    # normaliser) are read again, the others not
    assert 3 <= len(reread) < size // 4096 and sum(end - start for start, end, _ in reread) < 0.6 * size, (reread, size)


@pytest.mark.parametrize("pool_from", [1, 10**9])  # the ranges read by worker processes; in this process
def test_body_lines_the_lane_accepted_are_read_by_the_workers_and_stage_as_the_parent_reads_them(tmp_path, monkeypatch,
                                                                                                 pool_from):
    """A block of the lane's lines that holds no deferred line goes to a worker as a byte range (``_LaneRange``): the
    worker reads and fingerprints its body lines itself. The rows are those of the parent reading every block, and of
    the general normaliser; a range that cannot be read there (here: every third) is read by the parent."""
    from pipelines.ingest import body_chunks, readers

    logs = tmp_path / "logs"
    logs.mkdir()
    # clean records logging their bodies around a stretch of the mutated corpus: blocks with a deferred line, and
    # blocks without one
    rng = random.Random(4)
    clean = []
    for i in range(1000):
        fmt, body = rng.choice(sorted(bodies(rng).items()))
        if fmt == "bedrock_converse":
            continue
        record = {"ts": "2026-10-01T00:00:00Z", "tenant": f"t{i % 2}", "app": "chat", "request_id": f"c-{i}",
                  "request": logged_request(rng, i), "response": body}
        if i % 3 == 0:  # a line without a body among them: not read again
            del record["request"]
        clean.append(json.dumps(record, ensure_ascii=i % 2 == 0))
    lines = clean[:400] + corpus(4, 300) + clean[400:]
    (logs / "day.jsonl").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    real_count = ingest.count_lines
    monkeypatch.setattr(ingest, "count_lines",
                        lambda path, block_bytes=0, starts=None, **kw: real_count(path, 16384, starts, **kw))
    monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(body_chunks, "POOL_MIN_LINES", pool_from)
    monkeypatch.setattr(body_chunks, "_cores", lambda: 2)
    ranges: list = []
    submit = ingest._RangeWork.submit
    monkeypatch.setattr(ingest._RangeWork, "submit", lambda r, *rest: ranges.append(r) or submit(r, *rest))
    real_lines, calls = readers.lines_of_range, []

    def every_third_refused(*args):  # (in this process only: the pool's workers read every range)
        calls.append(args)
        if len(calls) % 3 == 0:
            raise readers.RangeUnreadable("refused by the test")
        return real_lines(*args)

    monkeypatch.setattr(body_chunks, "lines_of_range", every_third_refused)
    usage, quarantine = assert_same(tmp_path, logs)
    read_by_workers = staged(tmp_path, logs, True, "ranges")
    body_chunks.shutdown()
    real_read = ingest._read_lines_at
    monkeypatch.setattr(ingest, "_read_lines_at", lambda log, path, starts, numbers, deferred=None:
                        real_read(log, path, starts, numbers))  # every block read by the parent, as before ranges
    assert staged(tmp_path, logs, True, "chunks") == read_by_workers
    blocks = (logs / "day.jsonl").stat().st_size // 16384
    assert blocks // 4 < len({r.start for r in ranges}) < blocks, (len(ranges), blocks)  # many ranges, not every block
    assert sum(len(r.numbers) for r in ranges) > 150
    assert sum(row[31] is not None for row in usage) > 300  # fingerprinted rows (opening_hashes)
    assert pool_from == 1 or len(calls) > 30


def test_a_gzip_file_that_defers_lines_is_decompressed_once(tmp_path, monkeypatch):
    """The lane's count writes a gzip file's text to a scratch copy, which DuckDB and the block re-read read: the
    compressed file is read once (not by the count, DuckDB and the general reader in turn); every record is
    accepted or quarantined (test_gzip_files_take_the_fast_lane_and_stage_identically compares the rows)."""
    import builtins
    import io

    rng = random.Random(11)
    records = []
    for i in range(3000):
        fmt, body = rng.choice(sorted(bodies(rng).items()))
        body["id"] = f"{rng.getrandbits(128):032x}"  # incompressible enough that the file spans many read blocks
        if i in (7, 2999):  # deferred: a count that is text
            usage = body.get("usage") or body["usageMetadata"]
            usage[next(k for k in ("completion_tokens", "output_tokens", "outputTokens", "candidatesTokenCount") if k in usage)] = "12"
        records.append(json.dumps({"ts": "2026-10-01T00:00:00Z", "tenant": "t", "app": "chat", "request_id": f"g-{i}",
                                   "provider": "bedrock" if fmt == "bedrock_converse" else None, "response": body}))
    logs = tmp_path / "logs"
    logs.mkdir()
    gz = logs / "day.jsonl.gz"
    gz.write_bytes(gzip.compress(("\n".join(records) + "\n").encode(), 6))
    read_from_gz = [0]
    real_open = builtins.open

    class Counted(io.BufferedReader):
        def read(self, size=-1):
            out = super().read(size)
            read_from_gz[0] += len(out)
            return out

        def readinto(self, buffer):
            n = super().readinto(buffer)
            read_from_gz[0] += n or 0
            return n

    def counting_open(file, mode="r", *args, **kwargs):
        if str(file) == str(gz) and "b" in mode and "r" in mode:
            return Counted(real_open(file, "rb", buffering=0))
        return real_open(file, mode, *args, **kwargs)

    given_to_duckdb: list = []
    real_literal = ingest.duckdb_literal_path
    monkeypatch.setattr(ingest, "duckdb_literal_path", lambda path: given_to_duckdb.append(str(path)) or real_literal(path))
    monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0)
    conn = warehouse.connect(tmp_path / "lane.duckdb")
    monkeypatch.setattr(builtins, "open", counting_open)
    try:
        ingest.stage_logs(conn, logs)
    finally:
        monkeypatch.setattr(builtins, "open", real_open)
    quarantined = {row[0] for row in conn.execute("select source_line from core.quarantine").fetchall()}
    assert conn.execute("select count(*) from core.usage").fetchall()[0][0] + len(quarantined) == 3000
    assert {8, 3000} <= quarantined
    conn.close()
    size = gz.stat().st_size
    assert size > 65536
    # once whole, plus the head that identifies the file (a 64 KB read block at most)
    assert read_from_gz[0] <= size + 65536, (read_from_gz[0], size)
    assert given_to_duckdb and not any(path.endswith(".gz") for path in given_to_duckdb), given_to_duckdb


@pytest.mark.parametrize("alone", [True, False], ids=["a large file alone", "small files in one batch"])
def test_a_fast_lane_failure_loses_nothing_and_names_the_file_and_the_reason(tmp_path, monkeypatch, alone):
    # DuckDB's reader can fail on a file as a whole (an object above maximum_object_size; out of memory, seen
    # once on a 5M-line file): the general reader then takes the file, with the same rows, many times slower,
    # and the file's result says so, so the nightly log and the CLI can tell the user why the run was slow.
    logs = tmp_path / "logs"
    logs.mkdir()
    fixture = REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl"
    shutil.copy(fixture, logs / "a.jsonl")
    shutil.copy(fixture, logs / "b.jsonl")
    lines = len(fixture.read_text().splitlines())
    if alone:
        monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0)  # every file a batch of its own
    names = ("path",) + ingest.FAST_LANE_PARAMS
    failing = ("select error('Out of Memory Error: could not allocate block (simulated)') where ("
               + " or ".join(f"${n} is null" for n in names) + " or true)")
    real_statement = ingest.statement
    monkeypatch.setattr(ingest, "statement",
                        lambda name: failing if name == "ingest/fast_items__read_jsonl" else real_statement(name))
    conn = warehouse.prepare(__import__("duckdb").connect(":memory:"))
    results = ingest.stage_logs(conn, logs)
    assert [(r.source_file, r.rows_in, r.rows_accepted + r.rows_quarantined) for r in results] == [
        ("a.jsonl", lines, lines), ("b.jsonl", lines, lines)]
    assert conn.execute("select count(*) from core.usage").fetchone()[0] == 2 * lines - sum(r.rows_quarantined for r in results)
    for result in results:
        assert result.note == ("read by the general reader, many times slower: the fast reader failed (Invalid Input "
                               "Error: Out of Memory Error: could not allocate block (simulated)); raise "
                               "CACHEMETER_MEMORY_LIMIT for it")
    # another cause names no memory, nor the file DuckDB read (a gzip file's temporary text; a break test)
    assert ingest._lane_note(['Invalid Input Error: Malformed JSON in file "/tmp/cachemeter-stage-x/text.jsonl", at '
                              'byte 1 in record/value 2: unexpected end of data.']) == (
        "read by the general reader, many times slower: the fast reader failed (Invalid Input Error: Malformed JSON, at "
        "byte 1 in record/value 2: unexpected end of data.)")


@pytest.mark.parametrize("value", [10, 12.5, 0, [1], "x", {}, True])
def test_a_declared_object_holding_another_value_is_reported_as_the_general_walk_reports_it(tmp_path, value):
    """A declared usage object (OpenAI completion_tokens_details, Anthropic cache_creation) holding a number, an array,
    a string or {} types as a struct of nulls in the lane; the lane defers it, and a number above zero there is noted
    as unpriced usage (usage_issue, unmapped_usage) as the general walk notes it. 10 is as long as {} (2 characters),
    so the lane's length test alone would not list its keys."""
    logs = tmp_path / "logs"
    logs.mkdir()
    chat = {"id": "c1", "object": "chat.completion", "model": "gpt-4.1",
            "usage": {"prompt_tokens": 4446, "completion_tokens": 394, "completion_tokens_details": value}}
    messages = {"id": "m1", "type": "message", "model": "claude-sonnet-4-5",
                "usage": {"input_tokens": 40, "cache_read_input_tokens": 4000, "output_tokens": 9, "cache_creation": value}}
    lines = [{"ts": "2026-10-01T00:00:00Z", "request_id": f"r{i}", "response": body, **extra}
             for i, (body, extra) in enumerate([(chat, {}), (chat, {"request": {"messages": [{"role": "user", "content": "hi"}]}}),
                                                (messages, {})])]
    (logs / "details.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    usage, _ = assert_same(tmp_path, logs)
    issues = [row[USAGE_COLUMNS.split(", ").index("usage_issue")] for row in usage]
    note = "usage keys not mapped to a token class (not priced): usage."
    if value in (10, 12.5):
        assert issues == [f"{note}completion_tokens_details = {value}"] * 2 + [f"{note}cache_creation = {value}"]
    elif value == [1]:
        assert issues == [f"{note}completion_tokens_details[*] = 1"] * 2 + [f"{note}cache_creation[*] = 1"]
    else:  # zero, a string, {}, true: nothing above zero to note
        assert issues == [None, None, None]


@pytest.mark.parametrize("many_files", [False, True])  # one file read where it lies; small files read as one batch
def test_a_vertical_tab_or_form_feed_around_a_record_is_malformed_in_both_normalisers(tmp_path, many_files):
    """DuckDB's line reader trims a vertical tab or form feed around a record as whitespace; JSON does not allow them
    there, and the general normaliser quarantines the line as malformed. The lane defers every line holding one."""
    clean = corpus(5, 40)
    odd = [clean[0] + "\x0c", "\x0b" + clean[1], clean[2] + "\x0b\x0c", clean[3]]
    logs = tmp_path / "logs"
    logs.mkdir()
    if many_files:
        for i, line in enumerate(odd + clean[4:]):
            (logs / f"f{i:02d}.jsonl").write_text(line + "\n", encoding="utf-8")
    else:
        (logs / "odd.jsonl").write_text("\n".join(odd + clean[4:]) + "\n", encoding="utf-8")
        (logs / "odd.jsonl.gz").write_bytes(gzip.compress(("\n".join(odd) + "\n").encode()))
    usage, quarantine = assert_same(tmp_path, logs)
    malformed = {(row[0], row[1]) for row in quarantine if row[4].startswith("malformed JSON")}
    if many_files:
        assert {("f00.jsonl", 1), ("f01.jsonl", 1), ("f02.jsonl", 1)} <= malformed
    else:
        assert {(name, n) for name in ("odd.jsonl", "odd.jsonl.gz") for n in (1, 2, 3)} <= malformed


def _body_records(count: int, first: int = 0) -> list[str]:
    """Clean fast-lane records that log their request body (read again for their fingerprints)."""
    rng = random.Random(first + 5)
    out = []
    for i in range(first, first + count):
        fmt, body = rng.choice(sorted((k, v) for k, v in bodies(rng).items() if k != "bedrock_converse"))
        out.append(json.dumps({"ts": "2026-10-01T00:00:00Z", "tenant": "t", "app": "chat", "request_id": f"c-{i}",
                               "request": logged_request(rng, i), "response": body}))
    return out


@pytest.mark.parametrize("batch", [False, True])  # a file staged alone (read again by blocks); small files together
@pytest.mark.parametrize("change", ["deleted", "renamed", "truncated", "copytruncate", "last line finished", "appended"])
def test_a_file_that_changes_between_the_lanes_read_and_the_read_again_is_read_once_by_the_general_reader(
        tmp_path, monkeypatch, change, batch):
    """Log rotation and writers change files while a run reads them. The lane reads a file, then its body lines are
    read again by byte offset for their fingerprints: from other bytes, if the file changed in between (rows counted
    twice, fingerprints of other records, or a run stopped by a vanished file). Such a change is found before the
    batch is published, and the batch is read again by the general reader (each line read once): the file's rows are
    then those of its bytes now, its rows in = accepted + quarantined, and the other files are unharmed."""
    logs = tmp_path / "logs"
    logs.mkdir()
    day = logs / "day.jsonl"
    lines = _body_records(40)
    data = "\n".join(lines).encode()
    if change == "last line finished":
        data, rest = data[:-30], data[-30:] + b"\n"  # still being written when counted: finished before DuckDB reads it
    else:
        data += b"\n"
    day.write_bytes(data)
    (logs / "other.jsonl").write_text("\n".join(_body_records(5, 100)) + "\n")
    monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 1 << 30 if batch else 0)
    new_content = ("\n".join(_body_records(45, 200)) + "\n").encode()  # copytruncate: other records, longer

    def mutate():
        if change == "deleted":
            day.unlink()
        elif change == "renamed":
            day.rename(logs.parent / "day.jsonl.1")
        elif change == "truncated":
            with open(day, "r+b") as handle:
                handle.truncate(len(data) // 2)
        elif change == "copytruncate":
            with open(day, "r+b") as handle:
                handle.truncate(0)
                handle.write(new_content)
        elif change == "appended":  # whole lines: no change for a file read again by blocks; read whole, they are
            with open(day, "ab") as handle:
                handle.write(("\n".join(_body_records(3, 300)) + "\n").encode())

    if change == "last line finished":
        real_count = ingest.count_lines

        def count_then_finish(path, *args, **kwargs):
            counted = real_count(path, *args, **kwargs)
            if Path(path).name == "day.jsonl" and day.read_bytes() == data:
                with open(day, "ab") as handle:
                    handle.write(rest)
            return counted

        monkeypatch.setattr(ingest, "count_lines", count_then_finish)
        if batch:  # small files: the lane reads them whole into its batch, the write lands just after
            real_lane = ingest._batch_lane

            def lane_then_finish(*args):
                out = real_lane(*args)
                if day.read_bytes() == data:
                    with open(day, "ab") as handle:
                        handle.write(rest)
                return out

            monkeypatch.setattr(ingest, "_batch_lane", lane_then_finish)
    else:
        reader = "_read_file" if batch else "_read_lines_at"
        real_reader, mutated = getattr(ingest, reader), []

        def read_after_a_change(log, *args, **kwargs):
            if log.relative == "day.jsonl" and not mutated:
                mutated.append(mutate())
            return real_reader(log, *args, **kwargs)

        monkeypatch.setattr(ingest, reader, read_after_a_change)
    results, usage, quarantine = staged(tmp_path, logs, True, "changed")
    monkeypatch.undo()
    by_file = {r[0]: r[1:] for r in results}
    if change == "appended" and not batch:  # the lane's 40 lines, as they were read; the next run takes the rest
        rows_in, accepted, quarantined = by_file["day.jsonl"]
        assert rows_in == 40 == accepted + quarantined and len(usage) == accepted + 5
        return
    assert by_file["other.jsonl"] == (5, 5, 0)
    assert all(rows_in == accepted + quarantined for rows_in, accepted, quarantined in by_file.values())
    assert len({(row[19], row[20], row[21]) for row in usage}) == len(usage)  # no line staged twice (file, line, item)
    if change in ("deleted", "renamed"):
        # a new file gone: nothing staged of it (renamed, the next run stages it under its new name)
        assert by_file["day.jsonl"] == (0, 0, 0) and not [row for row in usage if row[19] == "day.jsonl"]
        return
    truth = tmp_path / "truth"
    truth.mkdir()
    shutil.copy(day, truth / "day.jsonl")
    shutil.copy(logs / "other.jsonl", truth / "other.jsonl")
    expected = staged(tmp_path, truth, False, "truth")  # the file as it is now, each line read once
    assert (results, usage, quarantine) == expected
    # the next run finds the file as this one staged it (its status taken again after the change): nothing to do
    assert staged(tmp_path, logs, True, "changed") == expected
    expected_rows = {"truncated": None, "copytruncate": 45, "last line finished": 40, "appended": 43}[change]
    if expected_rows:
        assert by_file["day.jsonl"][0] == expected_rows
    assert sum(row[31] is not None for row in usage if row[19] == "day.jsonl") >= (expected_rows or 1) - 1  # fingerprinted


def test_a_file_staged_before_that_vanishes_while_it_is_read_again_keeps_its_rows(tmp_path, monkeypatch):
    """A file deleted (or renamed away) between the lane's read and the read again keeps what an earlier run staged
    of it, as a file deleted between runs does, and the rest of the run goes on."""
    logs = tmp_path / "logs"
    logs.mkdir()
    day = logs / "day.jsonl"
    day.write_text("\n".join(_body_records(12)) + "\n")
    first = staged(tmp_path, logs, True, "w")
    with open(day, "a") as handle:  # changed since: staged again by the next run, and gone while that run reads it
        handle.write("\n".join(_body_records(2, 50)) + "\n")
    (logs / "other.jsonl").write_text("\n".join(_body_records(5, 100)) + "\n")
    monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0)
    real_read = ingest._read_lines_at
    monkeypatch.setattr(ingest, "_read_lines_at", lambda log, *args: (
        day.unlink() if log.relative == "day.jsonl" and day.exists() else None, real_read(log, *args))[1])
    results, usage, _ = staged(tmp_path, logs, True, "w")
    assert first[0] == [("day.jsonl", 12, 12, 0)]
    assert results == [("day.jsonl", 12, 12, 0), ("other.jsonl", 5, 5, 0)]
    assert sorted({row[0] for row in usage if row[19] == "day.jsonl"}) == sorted(row[0] for row in first[1])


def _usage_records(count: int, prefix: str) -> list[str]:
    """Clean fast-lane records without a request body (the lane reads them once; nothing is read again)."""
    return [json.dumps({"ts": "2026-10-01T00:00:00Z", "tenant": "t", "app": "chat", "request_id": f"{prefix}-{i}",
                        "response": {"model": "gpt-4o", "usage": {"prompt_tokens": 1200 + i, "completion_tokens": 5,
                                                                   "prompt_tokens_details": {"cached_tokens": 1024}}}})
            for i in range(count)]


def _day_and_other(tmp_path, monkeypatch, batch: bool):
    """logs/day.jsonl (20 records "old-*") and logs/other.jsonl (5), staged together (``batch``) or alone."""
    logs = tmp_path / "logs"
    logs.mkdir()
    day = logs / "day.jsonl"
    day.write_text("\n".join(_usage_records(20, "old")) + "\n")
    (logs / "other.jsonl").write_text("\n".join(_usage_records(5, "other")) + "\n")
    monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 1 << 30 if batch else 0)
    return logs, day


def _staged_as_now_then_the_rotated_copy(tmp_path, logs, first, new_rows: int, fast_lane: bool):
    """The run during the rotation staged day.jsonl as it is now (``new_rows``); the next stages day.jsonl.1's 20 rows,
    none quarantined, and the warehouse equals a fresh build of the folder."""
    assert dict((r[0], r[1:]) for r in first)["day.jsonl"] == (new_rows, new_rows, 0)
    results, usage, quarantine = staged(tmp_path, logs, fast_lane, "w")
    assert results == [("day.jsonl", new_rows, new_rows, 0), ("day.jsonl.1", 20, 20, 0), ("other.jsonl", 5, 5, 0)]
    assert quarantine == []
    truth = tmp_path / "truth"
    shutil.copytree(logs, truth)
    assert staged(tmp_path, truth, fast_lane, "truth")[1:] == (usage, quarantine)


@pytest.mark.parametrize("batch", [False, True])  # a file staged alone; small files together
@pytest.mark.parametrize("change", ["rotated", "copytruncate"])
def test_a_log_rotated_while_the_lane_reads_it_is_staged_as_it_is_now_and_the_rotated_copy_next(
        tmp_path, monkeypatch, change, batch):
    """A break test: `mv day.jsonl day.jsonl.1` and a new day.jsonl (logrotate's create mode), or copytruncate, just
    after the lane read the file. Its head and tail were then read by name from the new file and recorded with the old
    file's identity, so the next run took day.jsonl.1 for a file never seen and quarantined all its rows as duplicates
    of themselves. Now the change is found before publishing and the batch is read as it is now; the next run stages
    the rotated copy, and the warehouse equals a fresh build of the folder (README: "an incremental warehouse equals
    a fresh build")."""
    logs, day = _day_and_other(tmp_path, monkeypatch, batch)
    fresh = "\n".join(_usage_records(3, "new")) + "\n"

    def rotate():
        if change == "rotated":
            day.rename(logs / "day.jsonl.1")
            day.write_text(fresh)
        else:
            shutil.copy(day, logs / "day.jsonl.1")
            with open(day, "r+") as handle:
                handle.truncate(0)
                handle.write(fresh)

    lane = "_batch_lane" if batch else "_fast_lane"
    real_lane, rotated = getattr(ingest, lane), []

    def read_then_rotate(*args, **kwargs):
        out = real_lane(*args, **kwargs)
        if not rotated and (batch or args[1].relative == "day.jsonl"):
            rotated.append(rotate())
        return out

    monkeypatch.setattr(ingest, lane, read_then_rotate)
    first, _, _ = staged(tmp_path, logs, True, "w")
    monkeypatch.setattr(ingest, lane, real_lane)
    assert rotated
    # before: day.jsonl.1's 20 rows quarantined as "duplicate request_id"
    _staged_as_now_then_the_rotated_copy(tmp_path, logs, first, 3, fast_lane=True)


@pytest.mark.parametrize("batch", [False, True])
def test_a_log_copytruncated_and_grown_past_its_size_while_the_general_reader_reads_it_is_read_again(
        tmp_path, monkeypatch, batch):
    """A gap the rotation check left (noted when it landed): a file the general reader reads (not the lane), copied
    and truncated, then written past its old size before the check, kept its identity and did not shrink, so its
    old rows were published with the new content's head and tail: until the next run (which restaged both files and
    healed it) the warehouse held the rotated copy's rows under the live file's name and identity. The first bytes,
    pinned before the read, are compared after it: the batch is read again as it is now, as the lane's files are."""
    logs, day = _day_and_other(tmp_path, monkeypatch, batch)
    fresh = "\n".join(_usage_records(30, "new")) + "\n"  # longer than the old content
    assert len(fresh) > day.stat().st_size
    real_read, rotated = ingest._read_file, []

    def read_then_copytruncate(log, streaming):
        found, tables = real_read(log, streaming)
        tables = list(tables)  # every record read before the change
        if not rotated and log.relative == "day.jsonl":
            shutil.copy(day, logs / "day.jsonl.1")
            with open(day, "r+") as handle:
                handle.truncate(0)
                handle.write(fresh)
            rotated.append(True)
        return found, tables

    monkeypatch.setattr(ingest, "_read_file", read_then_copytruncate)
    first, _, _ = staged(tmp_path, logs, False, "w")
    monkeypatch.setattr(ingest, "_read_file", real_read)
    assert rotated
    _staged_as_now_then_the_rotated_copy(tmp_path, logs, first, 30, fast_lane=False)


def test_a_log_that_grew_while_the_lane_read_it_is_said_to_have_grown_not_rotated(tmp_path, monkeypatch):
    # a break test: lines appended during a read gave "changed while it was read (grew: rotated, truncated or
    # rewritten)", three things that had not happened
    logs, day = _day_and_other(tmp_path, monkeypatch, batch=True)
    with open(day, "a") as handle:  # a line the lane defers: the general reader reads the small file again whole
        handle.write('{"not": "usage"}\n')
    real_lane, grown = ingest._batch_lane, []

    def read_then_append(*args, **kwargs):
        out = real_lane(*args, **kwargs)
        if not grown:
            with open(day, "a") as handle:
                handle.write("\n".join(_usage_records(2, "late")) + "\n")
            grown.append(True)
        return out

    monkeypatch.setattr(ingest, "_batch_lane", read_then_append)
    conn = warehouse.connect(tmp_path / "w.duckdb")
    results = {r.source_file: r for r in ingest.stage_logs(conn, logs, latest=datetime(2030, 1, 1, tzinfo=timezone.utc))}
    assert grown and (results["day.jsonl"].rows_in, results["day.jsonl"].rows_accepted) == (23, 22)  # as it is now
    assert results["day.jsonl"].note == ("changed while it was read (lines were appended); read again as it is now, "
                                         "by the general reader, which reads each line once")
