"""Adapters and quarantine (sql/ingest/*.sql through lib/ingest.py) on real and hand-made records."""

import gzip
import json
import zlib
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from tests.conftest import REPO, write_jsonl

TS = "2026-11-20T10:00:00Z"


def stage(tmp_path: Path, logs: Path):
    conn = warehouse.connect(tmp_path / "w.duckdb")
    results = ingest.stage_logs(conn, logs)
    return conn, results


def rows(conn, sql):
    return conn.execute(sql).fetchall()


# ---- real provider payloads: pydantic-ai VCR cassettes ---------------------------------------

HOSTS = {"api.openai.com": "openai", "api.anthropic.com": "anthropic", "api.deepseek.com": "deepseek",
         "generativelanguage.googleapis.com": "gemini", "bedrock-runtime": "bedrock", "api.mistral.ai": "mistral",
         "api.cohere.com": "cohere"}
GENERATION_PATHS = ("/chat/completions", "/responses", "/messages", ":generateContent", "/converse", "/v2/chat")


def cassette_generations(shared: Path) -> list[tuple[str, str, str | None, dict]]:
    """(cassette, provider, model from URI or request, response body) of every generation call of the seven providers."""
    out = []
    for path in sorted((shared / "data" / "pydantic_ai_cache_cassettes").glob("*.yaml")):
        for interaction in yaml.safe_load(path.read_text())["interactions"]:
            uri = interaction["request"]["uri"]
            provider = next((p for host, p in HOSTS.items() if host in uri), None)
            body = interaction["response"].get("parsed_body")
            if provider and isinstance(body, dict) and any(p in uri.split("?")[0] for p in GENERATION_PATHS):
                model = unquote(uri.split("/model/")[1].split("/")[0]) if "/model/" in uri else None
                if provider == "cohere":  # Cohere v2 responses name no model; the request does
                    model = (interaction["request"].get("parsed_body") or {}).get("model")
                out.append((path.name, provider, model, body))
    return out


def expected_classes(provider: str, body: dict) -> tuple[int, int, int, int, int, int]:
    """Independent oracle from reference/providers.md section 0: (prompt, uncached, read, write 5m, write 1h, output)."""
    if provider == "anthropic":
        u = body["usage"]
        split = u.get("cache_creation") or {}
        w5 = split.get("ephemeral_5m_input_tokens", u.get("cache_creation_input_tokens", 0))
        w1 = split.get("ephemeral_1h_input_tokens", 0)
        read = u.get("cache_read_input_tokens", 0)
        return u["input_tokens"] + read + w5 + w1, u["input_tokens"], read, w5, w1, u["output_tokens"]
    if provider == "bedrock":
        u = body["usage"]
        read, write = u.get("cacheReadInputTokens", 0), u.get("cacheWriteInputTokens", 0)
        return u["inputTokens"] + read + write, u["inputTokens"], read, write, 0, u["outputTokens"]
    if provider == "cohere":  # billed_units are what Cohere bills (genai-prices' default Cohere extractor)
        billed = body["usage"]["billed_units"]
        return billed["input_tokens"], billed["input_tokens"], 0, 0, 0, billed["output_tokens"]
    if provider == "gemini":
        m = body["usageMetadata"]
        read = m.get("cachedContentTokenCount", 0)
        return (m["promptTokenCount"], m["promptTokenCount"] - read, read, 0, 0,
                m.get("candidatesTokenCount", 0) + m.get("thoughtsTokenCount", 0))
    u = body["usage"]
    if "input_tokens" in u:  # OpenAI Responses
        details = u.get("input_tokens_details") or {}
        read, write = details.get("cached_tokens", 0), details.get("cache_write_tokens", 0)
        return u["input_tokens"], u["input_tokens"] - read - write, read, write, 0, u["output_tokens"]
    details = u.get("prompt_tokens_details") or {}
    read = details.get("cached_tokens", u.get("prompt_cache_hit_tokens", 0))
    write = details.get("cache_write_tokens", 0)
    return u["prompt_tokens"], u["prompt_tokens"] - read - write, read, write, 0, u["completion_tokens"]


def test_every_cassette_generation_lands_with_the_right_token_classes(tmp_path, shared):
    generations = cassette_generations(shared)
    providers = {g[1] for g in generations}
    assert providers == {"openai", "anthropic", "bedrock", "gemini", "deepseek", "mistral", "cohere"}
    envelopes = [{"ts": TS, "provider": provider, "model": model, "request_id": f"cassette-{i}", "response": body}
                 for i, (_, provider, model, body) in enumerate(generations)]
    write_jsonl(tmp_path / "logs" / "cassettes.jsonl", envelopes)
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert results[0].rows_in == len(generations) == results[0].rows_accepted
    got = {r[0]: r[1:] for r in rows(conn, "select request_id, prompt_tokens, uncached_input_tokens, cache_read_tokens, "
                                           "cache_write_5m_tokens, cache_write_1h_tokens, output_tokens from core.usage")}
    for i, (_, provider, _, body) in enumerate(generations):
        assert got[f"cassette-{i}"] == expected_classes(provider, body), (provider, body.get("usage") or body.get("usageMetadata"))


def test_cassette_spot_values_from_the_recordings(tmp_path, shared):
    # Values read off the recordings themselves (pydantic-ai cassettes, ../shared/data/pydantic_ai_cache_cassettes)
    generations = cassette_generations(shared)
    write_jsonl(tmp_path / "logs" / "c.jsonl", [{"ts": TS, "provider": p, "model": m, "response": b}
                                                 for _, p, m, b in generations])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    by_format = rows(conn, "select source_format, provider, model, prompt_tokens, uncached_input_tokens, cache_read_tokens, "
                           "cache_write_5m_tokens, output_tokens, reasoning_tokens from core.usage order by source_file, source_line")
    # OpenAI chat, second call: 4,020 prompt tokens of which 4,012 cached -> 8 uncached
    assert ("openai_chat", "openai", 4020, 8, 4012, 0) in [(r[0], r[1], r[3], r[4], r[5], r[6]) for r in by_format]
    # Anthropic, second call of test_anthropic_cache_real_api: 3 uncached + 1,111 read + 418 written (5m) = 1,532
    assert ("anthropic_messages", 1532, 3, 1111, 418, 33) in [(r[0], r[3], r[4], r[5], r[6], r[7]) for r in by_format]
    # Bedrock Converse: model from the URI (inference profile), 2 uncached + 1,322 written
    assert ("bedrock_converse", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1324, 2, 0, 1322) in [
        (r[0], r[2], r[3], r[4], r[5], r[6]) for r in by_format]
    # Gemini: thoughts (42) are billed output beside candidates (2)
    assert ("gemini_generate_content", 3520, 8, 3512, 44, 42) in [(r[0], r[3], r[4], r[5], r[7], r[8]) for r in by_format]
    # DeepSeek: prompt_cache_hit_tokens 512 of 563
    assert ("deepseek_chat", 563, 51, 512, 116, 60) in [(r[0], r[3], r[4], r[5], r[7], r[8]) for r in by_format]
    # Mistral, second call: 268 prompt tokens of which 224 cached (prompt_tokens_details.cached_tokens)
    assert ("openai_chat", "mistral", "mistral-large-latest", 268, 44, 224, 0, 5) in [r[:8] for r in by_format]
    # Cohere v2: billed_units 2,406 in / 2 out are billed; cached_tokens 2,928 counts raw tokens (2,935) and has no rate
    assert ("cohere_chat", "cohere", 2406, 2406, 0, 2) in [(r[0], r[1], r[3], r[4], r[5], r[7]) for r in by_format]


# ---- envelopes, raw bodies and source.yaml defaults --------------------------------------------

def test_raw_bodies_with_their_own_time_need_no_envelope_and_envelope_ts_wins(tmp_path):
    chat = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764000000, "model": "gpt-4.1",
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 64}}}
    wrapped = {"ts": 1764100000, "provider": "azure", "tenant": "t1", "app": "a1", "response": {**chat, "id": "chatcmpl-2"}}
    write_jsonl(tmp_path / "logs" / "x.jsonl", [chat, wrapped])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    got = rows(conn, "select request_id, epoch(ts)::bigint, provider, tenant, app, uncached_input_tokens from core.usage order by 1")
    assert got == [("chatcmpl-1", 1764000000, "openai", "default", "default", 36),
                   ("chatcmpl-2", 1764100000, "azure", "t1", "a1", 36)]


def test_source_yaml_supplies_defaults_and_provider_aliases_are_accepted(tmp_path):
    logs = tmp_path / "logs" / "bedrock"
    logs.mkdir(parents=True)
    (logs / "source.yaml").write_text("provider: aws\nmodel: us.anthropic.claude-sonnet-4-5-20250929-v1:0\ntenant: acme\n")
    body = {"usage": {"inputTokens": 10, "cacheReadInputTokens": 90, "cacheWriteInputTokens": 0, "outputTokens": 3}}
    write_jsonl(logs / "b.jsonl", [{"ts": "2026-11-20T10:00:00+02:00", "app": "agent", "response": body},
                                   {"ts": TS, "provider": "vertex", "model": "gemini-2.5-flash",
                                    "response": {"usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1}}}])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    assert rows(conn, "select provider, model, tenant, app, prompt_tokens, hour(ts) from core.usage order by provider") == [
        ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "acme", "agent", 100, 8),
        ("gemini", "gemini-2.5-flash", "acme", "default", 10, 10)]


def test_json_array_files_and_gzip_files_are_read(tmp_path):
    body = {"type": "message", "id": "msg_a", "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 0, "output_tokens": 1}}
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.json").write_text(json.dumps([{"ts": TS, "response": body},
                                                          {"ts": TS, "response": {**body, "id": "msg_b"}}]))
    write_jsonl(tmp_path / "logs" / "b.jsonl.gz", [{"ts": TS, "response": {**body, "id": "msg_c"}}], gz=True)
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.source_file, r.rows_in, r.rows_accepted) for r in results] == [("a.json", 2, 2), ("b.jsonl.gz", 1, 1)]


# ---- bad input: quarantined with a reason, the rest of the file goes on -------------------------

GOOD = {"ts": TS, "provider": "openai", "model": "gpt-4.1",
        "response": {"usage": {"prompt_tokens": 2000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 1024}}}}


def with_usage(**usage):
    return {**GOOD, "response": {"usage": {**GOOD["response"]["usage"], **usage}}}


BAD_LINES = [
    ('{"ts": "2026-11-20T10:00:00Z", "response": {"usage": {"prompt_tokens": 12', "malformed JSON"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "ts"}), "no timestamp"),
    (json.dumps({**GOOD, "ts": "last tuesday"}), "unparseable timestamp"),
    (json.dumps(with_usage(prompt_tokens_details={"cached_tokens": 2500})), "cache tokens exceed prompt"),
    (json.dumps(with_usage(completion_tokens=-3)), "negative token count: output tokens = -3"),
    (json.dumps(with_usage(prompt_tokens=12.5)), "non-integer token count: prompt tokens = 12.5"),
    (json.dumps(with_usage(prompt_tokens="2000")), "prompt tokens is a string"),
    (json.dumps({**GOOD, "response": {"choices": []}}), "unknown shape"),
    (json.dumps({**GOOD, "response": {"usage": None}}), "usage is null: the record reports no token counts"),
    (json.dumps({**GOOD, "response": {"usage": [1]}}), "usage is not an object (array): the record reports no token"),
    ("[1, 2, 3]", "record is JSON array, not an object"),
]


def test_bad_lines_are_quarantined_with_specific_reasons_and_the_rest_is_kept(tmp_path):
    lines = [json.dumps({**GOOD, "request_id": "first"})] + [line for line, _ in BAD_LINES] + [json.dumps({**GOOD, "request_id": "last"})]
    write_jsonl(tmp_path / "logs" / "mixed.jsonl", lines)
    conn, results = stage(tmp_path, tmp_path / "logs")
    result = results[0]
    assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (13, 2, 11)
    reasons = dict(rows(conn, "select source_line, reason from core.quarantine"))
    for offset, (_, expected) in enumerate(BAD_LINES, start=2):
        assert expected in reasons[offset], (offset, reasons[offset])
    assert rows(conn, "select request_id from core.usage order by source_line") == [("first",), ("last",)]


def test_quarantine_excerpts_never_hold_prompt_or_completion_text(tmp_path):
    secret = "SECRET-PLANTED-IN-THE-PROMPT-7f3a"
    bad = {**with_usage(prompt_tokens_details={"cached_tokens": 9999}),
           "request": {"messages": [{"role": "system", "content": secret}]}}
    bad["response"]["choices"] = [{"message": {"content": secret}}]
    unparseable = '{"request": {"messages": [{"content": "' + secret + '"}]}, "response": '
    write_jsonl(tmp_path / "logs" / "s.jsonl", [json.dumps(bad), unparseable])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    excerpts = [r[0] for r in rows(conn, "select raw_excerpt from core.quarantine")]
    assert len(excerpts) == 2 and all(secret not in e for e in excerpts)
    conn.close()
    assert secret.encode() not in (tmp_path / "w.duckdb").read_bytes()


def test_anthropic_write_split_that_does_not_add_up_is_quarantined_not_clamped(tmp_path):
    body = {"type": "message", "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100, "output_tokens": 1,
                                         "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 30}}}
    write_jsonl(tmp_path / "logs" / "a.jsonl", [{"ts": TS, "response": body}])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    assert "does not equal the reported cache write count 100" in rows(conn, "select reason from core.quarantine")[0][0]


def test_duplicate_request_ids_across_files_count_once(tmp_path):
    write_jsonl(tmp_path / "logs" / "a.jsonl", [{**GOOD, "request_id": "dup"}])
    write_jsonl(tmp_path / "logs" / "b.jsonl", [{**GOOD, "request_id": "dup"}, {**GOOD, "request_id": "other"}])
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results] == [(1, 1, 0), (2, 1, 1)]
    assert rows(conn, "select reason, duplicate_request_id from core.quarantine") == [
        ("duplicate request_id dup (first seen in a.jsonl:1)", "dup")]


def test_a_rotated_log_keeps_its_rows_when_a_new_log_takes_its_name(tmp_path):
    # log rotation: usage.jsonl is renamed (staged first: '-' sorts before '.') and a new usage.jsonl
    # begins; the rotated file's ids were quarantined as duplicates of the old usage.jsonl until that
    # file was staged again with new content, so the rotated file is staged again after it
    logs = tmp_path / "logs"
    write_jsonl(logs / "usage.jsonl", [{**GOOD, "request_id": "r1"}, {**GOOD, "request_id": "r2"}])
    conn, _ = stage(tmp_path, logs)
    (logs / "usage.jsonl").rename(logs / "usage-2026-11-28.jsonl")
    write_jsonl(logs / "usage.jsonl", [{**GOOD, "request_id": "r3"}])
    results = ingest.stage_logs(conn, logs)
    assert rows(conn, "select request_id, source_file from core.usage order by 1") == [
        ("r1", "usage-2026-11-28.jsonl"), ("r2", "usage-2026-11-28.jsonl"), ("r3", "usage.jsonl")]
    assert rows(conn, "select count(*) from core.quarantine") == [(0,)]
    assert [(r.source_file, r.rows_accepted, r.rows_quarantined) for r in results] == [
        ("usage-2026-11-28.jsonl", 2, 0), ("usage.jsonl", 1, 0)]


def test_a_duplicate_is_accepted_once_the_first_copy_of_its_id_is_edited_away(tmp_path):
    # a.jsonl keeps its start (more than the 4 KB head) and grows: the same file edited, staged again;
    # the quarantined copy in b.jsonl is promoted from stage.duplicate_rows without reading b.jsonl again
    logs = tmp_path / "logs"
    head = [{**GOOD, "request_id": f"h{i}"} for i in range(40)]
    write_jsonl(logs / "a.jsonl", [*head, {**GOOD, "request_id": "dup"}])
    write_jsonl(logs / "b.jsonl", [{**GOOD, "request_id": "dup"}])
    conn, _ = stage(tmp_path, logs)
    assert rows(conn, "select source_file, duplicate_request_id from core.quarantine") == [("b.jsonl", "dup")]
    write_jsonl(logs / "a.jsonl", [*head, {**GOOD, "request_id": "dup"}, {**GOOD, "request_id": "more"}])
    appended = ingest.stage_logs(conn, logs)
    assert [r.skipped for r in appended] == [False, True]  # the first copy is still there: b.jsonl is left alone
    write_jsonl(logs / "a.jsonl", [*head, {**GOOD, "request_id": "other"}, {**GOOD, "request_id": "more"}])
    again = ingest.stage_logs(conn, logs)
    assert [(r.source_file, r.skipped, r.rows_accepted, r.rows_quarantined) for r in again] == [
        ("a.jsonl", False, 42, 0), ("b.jsonl", True, 1, 0)]
    assert rows(conn, "select request_id, source_file from core.usage where request_id not like 'h%' order by 1") == [
        ("dup", "b.jsonl"), ("more", "a.jsonl"), ("other", "a.jsonl")]
    assert rows(conn, "select count(*) from core.quarantine") == [(0,)]
    assert rows(conn, "select rows_accepted, rows_quarantined from stage.files where source_file = 'b.jsonl'") == [(1, 0)]


def test_an_id_repeated_inside_one_file_keeps_its_first_line_and_names_it(tmp_path):
    ids = ["x", "y", "x", "z", "x", "y"]
    write_jsonl(tmp_path / "logs" / "a.jsonl", [{**GOOD, "request_id": i} for i in ids])
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results] == [(6, 3, 3)]
    assert rows(conn, "select request_id, source_line from core.usage order by 2") == [("x", 1), ("y", 2), ("z", 4)]
    assert rows(conn, "select source_line, reason from core.quarantine order by 1") == [
        (3, "duplicate request_id x (first seen in a.jsonl:1)"),
        (5, "duplicate request_id x (first seen in a.jsonl:1)"),
        (6, "duplicate request_id y (first seen in a.jsonl:2)")]


def test_a_repeated_container_line_names_the_first_item_of_each_id(tmp_path):
    # an OTLP batch holds two GenAI spans (items 1 and 2); the same batch logged twice
    line = (REPO / "fixtures" / "formats" / "otel_genai" / "spans.otlp.jsonl").read_text().splitlines()[0]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(line + "\n" + line + "\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results] == [(4, 2, 2)]
    assert rows(conn, "select source_line, source_item from core.usage order by 1, 2") == [(1, 1), (1, 2)]
    assert rows(conn, "select source_line, source_item, reason from core.quarantine order by 1, 2") == [
        (2, 1, "duplicate request_id chatcmpl-Gcxx4UKT5TktGh1zHOHDstXHYycy0 (first seen in a.jsonl:1 item 1)"),
        (2, 2, "duplicate request_id msg_01Tbxb1OHSW2A2CqMhXfVql0 (first seen in a.jsonl:1 item 2)")]


def test_unchanged_files_are_skipped_and_changed_files_replace_their_rows(tmp_path):
    path = write_jsonl(tmp_path / "logs" / "a.jsonl", [{**GOOD, "request_id": "r1"}])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    again = ingest.stage_logs(conn, tmp_path / "logs")
    assert again[0].skipped
    write_jsonl(path, [{**GOOD, "request_id": "r1"}, {**GOOD, "request_id": "r2"}])
    ingest.stage_logs(conn, tmp_path / "logs")
    assert rows(conn, "select request_id from core.usage order by 1") == [("r1",), ("r2",)]


def test_truncated_gzip_keeps_what_was_read_and_quarantines_the_tail(tmp_path):
    path = write_jsonl(tmp_path / "logs" / "cut.jsonl.gz", [{**GOOD, "request_id": f"r{i}"} for i in range(2000)], gz=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    conn, results = stage(tmp_path, tmp_path / "logs")
    result = results[0]
    assert result.rows_quarantined >= 1 and result.rows_accepted > 0
    assert result.rows_in == result.rows_accepted + result.rows_quarantined
    assert any("cut short" in r[0] or "malformed JSON" in r[0] for r in rows(conn, "select reason from core.quarantine"))


def test_relative_trace_without_trace_start_is_quarantined_with_the_fix(tmp_path):
    write_jsonl(tmp_path / "logs" / "t.jsonl", [{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    assert "source.yaml sets no trace_start" in rows(conn, "select reason from core.quarantine")[0][0]


def test_symlinks_leaving_the_logs_folder_are_not_followed_unless_asked(tmp_path):
    outside = write_jsonl(tmp_path / "elsewhere" / "o.jsonl", [GOOD])
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "link.jsonl").symlink_to(outside)
    conn = warehouse.connect(tmp_path / "w.duckdb")
    assert ingest.stage_logs(conn, tmp_path / "logs") == []
    assert len(ingest.stage_logs(conn, tmp_path / "logs", follow_symlinks=True)) == 1


def test_editing_source_yaml_restages_the_files_beneath_it(tmp_path):
    logs = tmp_path / "logs" / "trace"
    write_jsonl(logs / "t.jsonl", [{"timestamp": 1000, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}])
    conn, first = stage(tmp_path, tmp_path / "logs")
    assert (first[0].rows_accepted, first[0].rows_quarantined) == (0, 1)  # no trace_start yet
    (logs / "source.yaml").write_text("model: kimi\ntrace_start: 2026-11-27T00:00:00Z\n")
    again = ingest.stage_logs(conn, tmp_path / "logs")
    assert not again[0].skipped and (again[0].rows_accepted, again[0].rows_quarantined) == (1, 0)
    assert rows(conn, "select ts::varchar, model from core.usage") == [("2026-11-27 00:00:01+00", "kimi")]


# ---- damage found by an adversarial pass: each must quarantine, never crash or drop silently ----

def gz_bytes(lines: list[str]) -> bytes:
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


TRACE_DEFAULTS = "provider: self_hosted\nmodel: kimi\ntrace_start: 2026-11-27T00:00:00Z\n"
GOOD_LINE = json.dumps({**GOOD, "request_id": "good"})


@pytest.mark.parametrize("name, content, source_yaml, expected_accepted, reason", [
    # too deep for Python's parser: the array's one record is read by DuckDB, as a JSONL line would be
    ("deep.json", "[" * 100_000 + "]" * 100_000, None, 0, "record is JSON array, not an object"),
    ("t.jsonl", json.dumps({"timestamp": 1, "input_length": 1024, "output_length": 5, "hash_ids": ["x", "y"]}),
     TRACE_DEFAULTS, 0, "hash_ids must be integers"),
    ("t.jsonl", json.dumps({"timestamp": 9 * 10**18, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}),
     TRACE_DEFAULTS, 0, "trace timestamp out of range"),
    ("old.jsonl", json.dumps({**GOOD, "ts": "1999-12-31T23:00:00Z"}), None, 0, "timestamp out of range"),
    ("future.jsonl", json.dumps({**GOOD, "ts": "2090-06-01T00:00:00Z"}), None, 0, "is in the future"),
    ("nan.jsonl", GOOD_LINE.replace('"prompt_tokens": 2000', '"prompt_tokens": NaN'), None, 0, "not a finite number"),
    ("ds.jsonl", json.dumps({"ts": TS, "provider": "deepseek", "response": {"usage": {
        "prompt_tokens": 100, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 10},
        "prompt_cache_hit_tokens": "garbage"}}}), None, 0, "cache hit tokens is a string"),
    ("UPPER.JSONL", GOOD_LINE, None, 1, None),
])
def test_damaged_inputs_are_quarantined_with_a_reason(tmp_path, name, content, source_yaml, expected_accepted, reason):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / name).write_text(content)
    if source_yaml:
        (logs / "source.yaml").write_text(source_yaml)
    write_jsonl(logs / "zz_other.jsonl", [json.dumps({**GOOD, "request_id": "other"})])
    conn, results = stage(tmp_path, logs)
    damaged = next(r for r in results if r.source_file == name)
    assert damaged.rows_accepted == expected_accepted
    assert damaged.rows_in == damaged.rows_accepted + damaged.rows_quarantined
    if reason:
        reasons = conn.execute("select string_agg(reason, ' | ') from core.quarantine where source_file = $f", {"f": name}).fetchall()
        assert reason in reasons[0][0]
    assert next(r for r in results if r.source_file == "zz_other.jsonl").rows_accepted == 1  # the run went on


@pytest.mark.parametrize("damage", ["cut", "trailing garbage"])
def test_damaged_gzip_keeps_every_complete_record_before_the_damage(tmp_path, damage):
    lines = [json.dumps({**GOOD, "request_id": f"r{i}", "app": "x" * (i % 50)}) for i in range(2000)]
    data = gz_bytes(lines)
    data = data[: len(data) // 2] if damage == "cut" else data + b"garbage-not-gzip"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "z.jsonl.gz").write_bytes(data)
    # what a tolerant decoder recovers from the same bytes: every complete line up to the damage
    decoder = zlib.decompressobj(wbits=31)
    recovered = decoder.decompress(data[: len(data) - (len(b"garbage-not-gzip") if damage != "cut" else 0)])
    complete = recovered.count(b"\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    result = results[0]
    assert result.rows_accepted == complete
    assert result.rows_quarantined == 1 and result.rows_in == complete + 1
    reason = rows(conn, "select reason from core.quarantine")[0][0]
    assert ("cut short" in reason) if damage == "cut" else ("bytes after the end of the gzip stream" in reason)


def test_source_yaml_rejects_a_boolean_block_size(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "source.yaml").write_text("block_size_tokens: true\n")
    write_jsonl(tmp_path / "logs" / "t.jsonl", [GOOD])
    conn, results = stage(tmp_path, tmp_path / "logs")  # the folder's files are quarantined with the reason
    [(line, reason)] = rows(conn, "select source_line, reason from core.quarantine")
    assert line == 0 and "block_size_tokens must be a positive integer" in reason
    assert rows(conn, "select count(*) from core.usage") == [(0,)]
    assert [(r.source_file, r.rows_in, r.rows_quarantined) for r in results] == [("t.jsonl", 1, 1)]


def test_prefix_family_prefers_an_explicit_key_then_the_body_then_the_series(tmp_path):
    body = {"usage": {"prompt_tokens": 10, "completion_tokens": 1}}
    request = {"messages": [{"role": "system", "content": "You are terse."}]}
    write_jsonl(tmp_path / "logs" / "a.jsonl", [
        {"ts": TS, "provider": "openai", "model": "m", "request_id": "key", "request": {**request, "prompt_cache_key": "k1"}, "response": body},
        {"ts": TS, "provider": "openai", "model": "m", "request_id": "gateway", "prefix_hash": "abc", "response": body},
        {"ts": TS, "provider": "openai", "model": "m", "request_id": "body", "request": request, "response": body},
        {"ts": TS, "provider": "openai", "model": "m", "request_id": "series", "response": body}])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    families = dict(rows(conn, "select request_id, split_part(prefix_family, ':', 1) from core.usage"))
    assert families == {"key": "key", "gateway": "key", "body": "fp", "series": "series"}


def test_azure_deployment_names_map_to_their_model_through_source_yaml(tmp_path):
    # docs/formats.md, Model ids: an Azure deployment name is mapped by source.yaml deployments before pricing
    logs = tmp_path / "logs"
    write_jsonl(logs / "azure.jsonl", [{"ts": TS, "model": "prod-chat", "request_id": "az1",
                                        "response": {"usage": {"prompt_tokens": 6000, "completion_tokens": 200,
                                                               "prompt_tokens_details": {"cached_tokens": 5000}}}}])
    (logs / "source.yaml").write_text("provider: azure\ndeployments:\n  prod-chat: gpt-4o-2024-11-20\n")
    conn, _ = stage(tmp_path, logs)
    assert rows(conn, "select provider, model, uncached_input_tokens, cache_read_tokens from core.usage") == [
        ("azure", "gpt-4o-2024-11-20", 1000, 5000)]
    from pipelines.lib.prices import resolve_price_model
    assert resolve_price_model("azure", "gpt-4o-2024-11-20") == "gpt-4o"


def test_a_span_whose_cache_counts_exceed_its_input_is_quarantined_with_that_reason(tmp_path):
    # OTel GenAI input counts are inclusive; an emitter forwarding Anthropic's raw input_tokens reports
    # reads above the input (providers.md section 9): a model cannot read more than its prompt
    span = {"otel_span": {"attributes": {"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
                                         "gen_ai.usage.input_tokens": 12, "gen_ai.usage.cache_read.input_tokens": 9800,
                                         "gen_ai.usage.output_tokens": 300}, "startTimeUnixNano": "1795169700180000000"}}
    write_jsonl(tmp_path / "logs" / "spans.jsonl", [span])
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_quarantined) == (1, 1)
    assert rows(conn, "select reason from core.quarantine")[0][0].startswith("cache tokens exceed prompt: cache read 9800")


@pytest.mark.parametrize("fast_lane", [True, False])
@pytest.mark.parametrize("layout", ["padded", "a member's magic across two reads"])
def test_zero_bytes_after_a_gzip_stream_are_padding_for_either_reader(tmp_path, fast_lane, layout):
    # GNU gzip and CPython's gzip module (gzip._GzipReader._read_eof, after the gzip FAQ) skip zero bytes after a
    # member: the fast lane (gzip.open) took a padded file whole while the general reader quarantined "bytes after
    # the end of the gzip stream", so the file's rows depended on which reader took it; so did a next member whose
    # two magic bytes fell on either side of one of the general reader's reads (readers.READ_BYTES)
    from pipelines.ingest import readers

    lines = [json.dumps({**GOOD, "request_id": f"r{i}"}) for i in range(60)]
    first = gz_bytes(lines[:40])
    pad = 700 if layout == "padded" else readers.READ_BYTES - 1 - len(first)
    assert pad > 0
    data = first + b"\x00" * pad + gz_bytes(lines[40:]) + b"\x00" * 5000  # a member after padding too
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "z.jsonl.gz").write_bytes(data)
    conn = warehouse.connect(tmp_path / "w.duckdb")
    result = ingest.stage_logs(conn, tmp_path / "logs", fast_lane=fast_lane)[0]
    assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (60, 60, 0)
    assert rows(conn, "select count(distinct request_id) from core.usage") == [(60,)]


def test_a_time_without_a_zone_is_utc_whatever_zone_the_line_before_named(tmp_path):
    # a break test: DuckDB 1.5.5's cast to TIMESTAMPTZ carries a named zone over to the texts after it in the same
    # vector ('2026-11-20 09:00:00' after a line in Asia/Tokyo came out 00:00 UTC, a date alone on the UTC day before);
    # and it took any two-digit offset ('+99:99' moved a request by four days): offsets in use run -12:00 .. +14:00
    # (the IANA time zone database)
    times = [("naive-1", "2026-11-20 09:00:00", "2026-11-20 09:00:00+00"),
             ("tokyo", "2026-11-20T09:00:00 Asia/Tokyo", "2026-11-20 00:00:00+00"),
             ("naive-2", "2026-11-20 09:00:00", "2026-11-20 09:00:00+00"),
             ("date", "2026-11-20", "2026-11-20 00:00:00+00"),
             ("new-york", "2026-11-20T09:00:00.5 America/New_York", "2026-11-20 14:00:00.5+00"),
             ("naive-3", "2026-11-20T09:30:00", "2026-11-20 09:30:00+00"),
             ("nepal", "2026-11-20T09:00:00+05:45", "2026-11-20 03:15:00+00"),
             ("kiritimati", "2026-11-20T09:00:00+14:00", "2026-11-19 19:00:00+00"),
             ("zulu", "2026-11-20T09:00:00Z", "2026-11-20 09:00:00+00")]
    impossible = ["2026-11-20T09:00:00+99:99", "2026-11-20T09:00:00-99:00", "2026-11-20T09:00:00+24:00",
                  "2026-11-20T09:00:00+05:75"]
    records = [{**GOOD, "request_id": rid, "ts": ts} for rid, ts, _ in times]
    records += [{**GOOD, "request_id": f"bad-{n}", "ts": ts} for n, ts in enumerate(impossible)]
    write_jsonl(tmp_path / "logs" / "lines.jsonl", records)  # the fast lane
    (tmp_path / "logs" / "array.json").write_text(json.dumps(  # the general normaliser
        [{**r, "request_id": "array-" + r["request_id"]} for r in records]))
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.rows_in, r.rows_accepted) for r in results] == [(13, 9), (13, 9)]
    stored = dict(rows(conn, "select request_id, strftime(ts, '%Y-%m-%d %H:%M:%S') || "
                             "case when microsecond(ts) > 0 then '.5' else '' end || '+00' from core.usage"))
    for rid, _, utc in times:
        assert stored[rid] == stored["array-" + rid] == utc, rid
    reasons = [r for (r,) in rows(conn, "select reason from core.quarantine order by source_file, source_line")]
    assert len(reasons) == 8 and all("unparseable timestamp" in r for r in reasons), reasons


def test_a_blank_request_id_is_no_id_and_the_next_one_is_used(tmp_path):
    # a break test: "" was taken as an id, so every later record with a blank id (in any file, any format) was
    # quarantined as its duplicate and left the totals
    anthropic = {"ts": TS, "response": {"type": "message", "model": "claude-sonnet-4-5-20250929",
                                        "usage": {"input_tokens": 100, "output_tokens": 5}}}
    lines = [{**anthropic, "request_id": blank, "response": {**anthropic["response"], "id": f"msg_{n}"}}
             for n, blank in enumerate(["", "  ", "\t", ""], start=1)]
    write_jsonl(tmp_path / "logs" / "a.jsonl", lines)  # the fast lane
    (tmp_path / "logs" / "b.json").write_text(json.dumps(  # the general normaliser
        [{**line, "response": {**line["response"], "id": line["response"]["id"] + "b"}} for line in lines]))
    write_jsonl(tmp_path / "logs" / "c.jsonl", [{**GOOD, "response": {**GOOD["response"], "id": ""}}] * 2)  # no id at all
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results] == [(4, 4, 0), (4, 4, 0), (2, 2, 0)]
    ids = [r for (r,) in rows(conn, "select request_id from core.usage order by source_file, source_line")]
    assert ids[:8] == ["msg_1", "msg_2", "msg_3", "msg_4", "msg_1b", "msg_2b", "msg_3b", "msg_4b"]
    assert all(i.startswith("line-") for i in ids[8:]) and ids[8] != ids[9]  # minted from the file and line


def test_a_record_too_large_for_the_memory_limit_is_quarantined_and_the_rest_staged(tmp_path, monkeypatch):
    # a break test: one 50 MB line failed the whole run on DuckDB's out-of-memory error (at the default 1 GB), and
    # no file of the run was staged; here a 40 MB line at a 128 MB limit (past the fast lane's object size)
    monkeypatch.setenv("CACHEMETER_MEMORY_LIMIT", "128MB")
    anthropic = lambda rid, text: {"ts": TS, "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929", "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 10, "output_tokens": 1}}}
    write_jsonl(tmp_path / "logs" / "a.jsonl", [anthropic("a1", "short"), anthropic("big", "x" * 40 * 2**20),
                                                anthropic("a3", "short")])
    write_jsonl(tmp_path / "logs" / "b.jsonl", [anthropic("b1", "short")])
    conn = warehouse.connect(tmp_path / "w.duckdb", memory_limit="128MB")
    results = ingest.stage_logs(conn, tmp_path / "logs")
    assert [(r.source_file, r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results] == [
        ("a.jsonl", 3, 2, 1), ("b.jsonl", 1, 1, 0)]
    assert rows(conn, "select request_id from core.usage order by request_id") == [("a1",), ("a3",), ("b1",)]
    (line, reason, excerpt), = rows(conn, "select source_line, reason, raw_excerpt from core.quarantine")
    assert line == 2 and reason == ("record of 40.0 MB: normalising it needs more memory than DuckDB's memory limit "
                                    "allows (CACHEMETER_MEMORY_LIMIT=128MB: touch the file and run again with a larger one)")
    assert "xxxx" not in excerpt  # the excerpt names the reason, never the record's text


def test_a_limit_no_record_fits_stops_at_once_instead_of_halving_down_to_every_record(tmp_path, monkeypatch):
    # measured: at a 30MB limit the 540 lines of a demo day took 56 s of halving (about two failed statements per
    # line) before the run stopped; a day of millions of lines would have taken hours
    import shutil

    import duckdb

    (tmp_path / "logs").mkdir()
    shutil.copy(REPO / "fixtures" / "demo_logs" / "usage-2026-11-18.jsonl.gz", tmp_path / "logs")
    monkeypatch.setenv("CACHEMETER_MEMORY_LIMIT", "30MB")
    tries = []
    normalise_chunk = ingest._normalise_chunk
    monkeypatch.setattr(ingest, "_normalise_chunk", lambda conn, chunk, params: (tries.append(chunk.num_rows),
                                                                                 normalise_chunk(conn, chunk, params)))
    conn = warehouse.connect(tmp_path / "w.duckdb", memory_limit="30MB")
    with pytest.raises(duckdb.OutOfMemoryException):
        ingest.stage_logs(conn, tmp_path / "logs")
    assert tries == [540, 1]  # the chunk of the lines the lane defers, then its shortest record alone


def test_a_json_array_file_reads_each_record_as_a_jsonl_file_does(tmp_path):
    # break tests: of a key given twice a .json array kept the last value (Python's parser, then json.dumps) and a
    # .jsonl line the first (DuckDB's), so the same record counted 100 or 999,999 input tokens by its file's name;
    # one record nested 10,000 deep made the whole array one unreadable record ("nesting too deep"), its sound
    # records lost and rows in counted 1
    twice = ('{"ts": "2026-11-20T10:00:00Z", "provider": "openai", "model": "gpt-4.1", "request_id": "%s", "response": '
             '{"usage": {"prompt_tokens": 100, "prompt_tokens": 999999, "completion_tokens": 10}}}')
    deep = json.dumps({**GOOD, "request_id": "deep", "metadata": "DEEP"}).replace('"DEEP"', "[" * 10_000 + "]" * 10_000)
    logs = tmp_path / "logs"
    write_jsonl(logs / "a.jsonl", [twice % "line"])
    (logs / "b.json").write_text("[" + twice % "array" + ",\n  " + deep + ",\n" + json.dumps({**GOOD, "request_id": "good"})
                                 + "]")
    conn, results = stage(tmp_path, logs)
    assert [(r.source_file, r.rows_in, r.rows_accepted) for r in results] == [("a.jsonl", 1, 1), ("b.json", 3, 3)]
    assert rows(conn, "select request_id, prompt_tokens from core.usage order by request_id") == [
        ("array", 100), ("deep", 2000), ("good", 2000), ("line", 100)]


def test_gemini_through_the_openai_endpoint_bills_the_thinking_its_total_counts(tmp_path):
    # a break test: through Gemini's OpenAI-compatibility endpoint completion_tokens leaves out thinking while
    # total_tokens counts it (providers.md 4.1 and pitfall 11): 1,000 + 100 with a total of 1,600 is 500 thinking
    # tokens of output, which were lost. OpenAI's own total is not read so (its gap would be another key's).
    chat = lambda rid, provider, model: {  # noqa: E731
        "ts": TS, "provider": provider, "model": model, "request_id": rid, "response": {
            "object": "chat.completion", "model": model,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1600}}}
    write_jsonl(tmp_path / "logs" / "a.jsonl", [chat("gemini", "gemini", "gemini-2.5-flash"),
                                                chat("openai", "openai", "gpt-4.1-mini"),
                                                {**chat("even", "gemini", "gemini-2.5-flash"), "response": {
                                                    "object": "chat.completion", "model": "gemini-2.5-flash",
                                                    "usage": {"prompt_tokens": 1000, "completion_tokens": 100,
                                                              "total_tokens": 1100}}}])
    for fast_lane in (True, False):
        (tmp_path / str(fast_lane)).mkdir()
        conn = warehouse.connect(tmp_path / str(fast_lane) / "w.duckdb")
        ingest.stage_logs(conn, tmp_path / "logs", fast_lane=fast_lane)
        assert rows(conn, "select request_id, prompt_tokens, output_tokens, reasoning_tokens from core.usage order by 1") == [
            ("even", 1000, 100, None), ("gemini", 1000, 600, 500), ("openai", 1000, 100, None)], fast_lane
