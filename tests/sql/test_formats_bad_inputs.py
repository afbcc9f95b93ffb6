"""Bad and tricky input in the newer source formats: never a crash, every record counted, nothing guessed.

Cases from an adversarial pass over the format readers (containers, SSE, CSV, Parquet, batch results,
gateway rows); each asserts what lands and what is quarantined, with its reason.
"""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from tests.conftest import write_jsonl
from tests.sql.test_ingest_normalise import rows, stage


def test_otlp_batch_with_a_junk_resource_and_junk_int_values(tmp_path):
    def attrs(**values):
        return [{"key": k, "value": v} for k, v in values.items()]

    span = lambda span_id, tokens: {"traceId": "t", "spanId": span_id, "startTimeUnixNano": "1795169700180000000",  # noqa: E731
                                    "attributes": attrs(**{"gen_ai.provider.name": {"stringValue": "openai"},
                                                           "gen_ai.request.model": {"stringValue": "gpt-4.1-mini"},
                                                           "gen_ai.usage.input_tokens": {"intValue": tokens},
                                                           "gen_ai.usage.output_tokens": {"intValue": "10"}})}
    write_jsonl(tmp_path / "logs" / "spans.jsonl", [
        {"resourceSpans": [{"resource": "junk", "scopeSpans": [{"spans": [span("a", "100")]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [span("b", "1_000"), span("c", " 100 ")]}]}]}])
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (3, 1, 2)
    reasons = [r[0] for r in rows(conn, "select reason from core.quarantine order by source_item")]
    assert all(r.startswith("prompt tokens is a string") for r in reasons), reasons


def test_sse_streams_that_lost_their_terminator_still_split_and_a_bad_usage_is_quarantined(tmp_path):
    chat = lambda i, prompt: (f'data: {{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1795140847,'  # noqa: E731
                              f'"model":"gpt-4.1-mini","choices":[],"usage":{{"prompt_tokens":{prompt},"completion_tokens":7}}}}\n\n')
    anthropic_bad = ('event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5",'
                     '"usage":[1,2]}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "s.sse").write_text(chat(1, 1000) + chat(2, 2000) + "data: [DONE]\n\n" + anthropic_bad)
    (tmp_path / "logs" / "source.yaml").write_text("ts: 2026-11-20T09:00:00Z\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (3, 2, 1)
    assert rows(conn, "select request_id, prompt_tokens from core.usage order by 1") == [
        ("chatcmpl-1", 1000), ("chatcmpl-2", 2000)]
    assert rows(conn, "select reason from core.quarantine") == [("message_start carries no usage object",)]


def test_csv_keeps_ids_as_text_rejects_one_bad_cell_and_numbers_rows_by_line(tmp_path):
    header = "request_id,ts,provider,model,tenant,uncached_input_tokens,cache_read_tokens,output_tokens\n"
    body = ("007,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,0042,50,0,4\n"
            "7,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,a,50,N/A,4\n"
            "8,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,a,50\n"            # wrong cell count, line 4
            "9,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,a,60,0,400 tokens\n"
            "10,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,a,70,0,5\n")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "u.csv").write_text(header + body)
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (5, 2, 3)
    assert rows(conn, "select source_line, request_id, tenant from core.usage order by 1") == [
        (2, "007", "0042"), (6, "10", "a")]
    assert rows(conn, "select source_line, reason from core.quarantine order by 1") == [
        (3, 'cache read tokens is a string, not a number ("N/A")'),
        (4, "CSV row has 6 cells, the header has 8"),
        (5, 'output tokens is a string, not a number ("400 tokens")')]


def test_parquet_with_repeated_columns_binary_cells_decimals_and_nan(tmp_path):
    (tmp_path / "logs").mkdir()
    base = {"request_id": ["p1", "p2"], "ts": ["2026-11-20T09:00:00Z"] * 2, "provider": ["openai"] * 2,
            "model": [b"gpt-4.1-mini", b"gpt-4.1-mini"]}
    table = pa.table({**base, "uncached_input_tokens": pa.array([50, 60], pa.decimal128(38, 0)),
                      "output_tokens": pa.array([4.0, float("nan")], pa.float64())})
    pq.write_table(table, tmp_path / "logs" / "typed.parquet")
    pq.write_table(pa.table([pa.array([1]), pa.array([2])], names=["output_tokens", "output_tokens"]),
                   tmp_path / "logs" / "repeated.parquet")
    conn, results = stage(tmp_path, tmp_path / "logs")
    by_file = {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results}
    assert by_file == {"typed.parquet": (2, 1, 1), "repeated.parquet": (1, 0, 1)}
    assert rows(conn, "select request_id, model, uncached_input_tokens, output_tokens from core.usage") == [
        ("p1", "gpt-4.1-mini", 50, 4)]
    reasons = sorted(r[0] for r in rows(conn, "select reason from core.quarantine"))
    assert reasons == ["Parquet file has repeated column names: output_tokens",
                       'output tokens is a string, not a number ("nan")']


def test_batch_custom_ids_repeat_across_batches_and_errors_never_leak_their_message(tmp_path):
    def line(custom_id, body_id, error=None):
        body = {"id": body_id, "object": "chat.completion", "created": 1795140847, "model": "gpt-4.1-mini",
                "usage": {"prompt_tokens": 100, "completion_tokens": 5}}
        return {"custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": error}

    write_jsonl(tmp_path / "logs" / "batch_a.jsonl", [line("request-1", "chatcmpl-a1")])
    write_jsonl(tmp_path / "logs" / "batch_b.jsonl", [
        line("request-1", "chatcmpl-b1"),
        line("request-2", "chatcmpl-b2", {"code": "bad", "message": "SECRET PROMPT ECHO"})])
    conn, _ = stage(tmp_path, tmp_path / "logs")
    assert rows(conn, "select request_id from core.usage order by 1") == [("chatcmpl-a1",), ("chatcmpl-b1",)]
    reason, excerpt = rows(conn, "select reason, raw_excerpt from core.quarantine")[0]
    assert reason == "batch request failed (status 200, bad): not billed" and "SECRET" not in excerpt


def test_a_json_file_holding_json_lines_and_an_empty_report_page(tmp_path):
    (tmp_path / "logs").mkdir()
    body = {"id": "r1", "object": "chat.completion", "created": 1795140847, "model": "gpt-4.1-mini",
            "usage": {"prompt_tokens": 100, "completion_tokens": 5}}
    (tmp_path / "logs" / "lines.json").write_text(json.dumps(body) + "\n" + json.dumps({**body, "id": "r2"}) + "\n")
    write_jsonl(tmp_path / "logs" / "report.jsonl", [{"data": [], "has_more": False, "next_page": None}])
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert {r.source_file: (r.rows_in, r.rows_accepted) for r in results} == {"lines.json": (2, 2), "report.jsonl": (0, 0)}


def test_a_nan_inside_a_parquet_struct_is_rejected_not_read_as_zero(tmp_path):
    # a break test: a NaN or inf count inside a nested struct (the response object) was encoded as null by polars and
    # the row accepted with 0 cache reads; only top-level float columns were checked
    (tmp_path / "logs").mkdir()
    usage = pa.struct([("input_tokens", pa.float64()), ("cache_read_input_tokens", pa.float64()), ("output_tokens", pa.float64())])
    response = pa.struct([("id", pa.string()), ("type", pa.string()), ("model", pa.string()), ("usage", usage)])
    message = lambda rid, read: {"id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929",  # noqa: E731
                                 "usage": {"input_tokens": 50.0, "cache_read_input_tokens": read, "output_tokens": 400.0}}
    pq.write_table(pa.table({"ts": ["2026-11-20T09:15:02Z"] * 3, "response": pa.array(
        [message("m0", float("nan")), message("m1", float("inf")), message("m2", 20.0)], response)}),
        tmp_path / "logs" / "nested.parquet")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (3, 1, 2)
    assert rows(conn, "select request_id, cache_read_tokens from core.usage") == [("m2", 20)]
    assert sorted(r[0] for r in rows(conn, "select reason from core.quarantine")) == [
        'cache read tokens is a string, not a number ("inf")', 'cache read tokens is a string, not a number ("nan")']


def test_a_cut_short_anthropic_stream_is_quarantined_not_billed_at_its_placeholder(tmp_path):
    # break tests: a message_delta cut mid-JSON, and a stream ending after message_start, were accepted with
    # message_start's placeholder output count (1 token for 4,000); the payload is never quoted
    start = ('event: message_start\ndata: {"type":"message_start","message":{"id":"%s","type":"message","role":"assistant",'
             '"model":"claude-sonnet-4-5-20250929","content":[],"usage":{"input_tokens":50,"cache_read_input_tokens":20000,'
             '"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n')
    delta = 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4000%s\n\n'
    stop = 'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "cut.sse").write_text(start % "cut" + delta % "" + stop)
    (tmp_path / "logs" / "ended.sse").write_text(start % "ended")
    (tmp_path / "logs" / "whole.sse").write_text(start % "whole" + delta % "}}" + stop)
    (tmp_path / "logs" / "source.yaml").write_text("ts: 2026-11-20T09:00:00Z\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results} == {
        "cut.sse": (1, 0, 1), "ended.sse": (1, 0, 1), "whole.sse": (1, 1, 0)}
    assert rows(conn, "select request_id, output_tokens from core.usage") == [("whole", 4000)]
    assert rows(conn, "select source_file, reason from core.quarantine order by 1") == [
        ("cut.sse", "event 2 of 3 is not JSON: the stream was cut short or damaged, so its usage cannot be told"),
        ("ended.sse", "Anthropic stream without a message_delta carrying usage: cut short after message_start, "
                      "whose output count is a placeholder")]


def test_a_csv_quote_left_open_quarantines_its_line_and_the_rows_after_it_are_read(tmp_path):
    # a break test: one stray '"' took every later row of the file into one quarantined record ("CSV row has 5 cells,
    # the header has 8"), rows in counting 1 for 5; a quoted newline that closes is still one row
    header = "request_id,ts,provider,model,tenant,uncached_input_tokens,cache_read_tokens,output_tokens\n"
    row = lambda rid, tenant="a": f"{rid},2026-11-20T09:00:00Z,openai,gpt-4.1-mini,{tenant},50,0,4\n"  # noqa: E731
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "u.csv").write_text(header + row("r1", '"a\nb"') + row("r2", '"acme') + row("r3") + row("r4"))
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (4, 3, 1)
    assert rows(conn, "select source_line, request_id, tenant from core.usage order by 1") == [
        (2, "r1", "a\nb"), (5, "r3", "a"), (6, "r4", "a")]  # r1's quoted newline: r2 starts on line 4
    assert rows(conn, "select source_line, reason from core.quarantine") == [
        (4, "CSV row has a quote that is not closed: it ran over the 2 line(s) after it, which are read again as rows")]


def test_parquet_decimal_counts_with_a_scale_or_inside_a_struct_are_counts(tmp_path):
    # break tests: token counts typed decimal(30, 2) (50.00) were all rejected "is a string, not a number", and so
    # was a decimal(38, 0) count inside a struct (polars encodes a nested decimal as text); a cost keeps its exact text
    from decimal import Decimal

    (tmp_path / "logs").mkdir()
    counts = pa.decimal128(30, 2)
    pq.write_table(pa.table({
        "request_id": ["d1", "d2"], "ts": ["2026-11-20T09:00:00Z"] * 2, "provider": ["openai"] * 2,
        "model": ["gpt-4.1-mini"] * 2,
        "uncached_input_tokens": pa.array([Decimal("50.00"), Decimal("60.00")], counts),
        "output_tokens": pa.array([Decimal("4.00"), Decimal("5.00")], counts),
        "reported_cost_usd": pa.array([Decimal("0.0000123456789"), None], pa.decimal128(38, 15))}),
        tmp_path / "logs" / "scaled.parquet")
    usage = pa.struct([("input_tokens", pa.decimal128(38, 0)), ("output_tokens", pa.decimal128(38, 0))])
    response = pa.struct([("id", pa.string()), ("type", pa.string()), ("model", pa.string()), ("usage", usage)])
    pq.write_table(pa.table({"ts": ["2026-11-20T09:15:02Z"], "response": pa.array([{
        "id": "n1", "type": "message", "model": "claude-sonnet-4-5-20250929",
        "usage": {"input_tokens": Decimal(50), "output_tokens": Decimal(400)}}], response)}),
        tmp_path / "logs" / "nested.parquet")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert {r.source_file: (r.rows_in, r.rows_accepted) for r in results} == {"scaled.parquet": (2, 2),
                                                                            "nested.parquet": (1, 1)}
    assert rows(conn, "select request_id, uncached_input_tokens, output_tokens, reported_cost_usd from core.usage "
                      "order by 1") == [("d1", 50, 4, Decimal("0.000012345678900")), ("d2", 60, 5, None),
                                        ("n1", 50, 400, None)]


def test_json_lines_under_a_json_name_lose_only_their_bad_lines(tmp_path):
    # break tests: JSON lines named .json (the OTel collector file exporter's default) were lost whole by one byte that
    # is not UTF-8 ("malformed JSON file: 'utf-8' codec can't decode"), or by two damaged lines at the top (read as
    # one damaged value); a .jsonl file of the same lines loses only those lines
    good = lambda rid: json.dumps({"ts": "2026-11-20T09:00:00Z", "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929",
        "usage": {"input_tokens": 10, "output_tokens": 5}}}).encode()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "bad_byte.json").write_bytes(good("a1").replace(b"claude", b"cl\xffaude") + b"\n" + good("a2") + b"\n")
    (tmp_path / "logs" / "bad_top.json").write_bytes(b'{"partial": \ngarbage\n' + good("b1") + b"\n" + good("b2") + b"\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results} == {
        "bad_byte.json": (2, 1, 1), "bad_top.json": (4, 2, 2)}
    assert rows(conn, "select request_id from core.usage order by 1") == [("a2",), ("b1",), ("b2",)]
    assert rows(conn, "select source_file, source_line, left(reason, 40) from core.quarantine order by 1, 2") == [
        ("bad_byte.json", 1, "not UTF-8 text (invalid byte at offset 1"), ("bad_top.json", 1, "malformed JSON: Expecting value at line "),
        ("bad_top.json", 2, "malformed JSON: Expecting value at line ")]


def test_a_json_array_with_a_malformed_record_says_how_much_after_it_is_not_read(tmp_path):
    (tmp_path / "logs").mkdir()
    record = lambda i: json.dumps({"ts": "2026-11-20T09:15:02Z", "response": {  # noqa: E731
        "id": f"m{i}", "type": "message", "model": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": 5, "output_tokens": 5}}})
    records = [record(i) for i in range(5)]
    records[1] = records[1].replace('"m1"', '"m1\\x"')
    (tmp_path / "logs" / "m.json").write_text("[\n" + ",\n".join(records) + "\n]\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (2, 1, 1)
    (reason,), = rows(conn, "select reason from core.quarantine")
    tail = len(("\n".join([records[1] + ","] + [r + "," for r in records[2:4]] + [records[4], "]", ""])).encode())
    assert reason.startswith("malformed JSON array: record 2 is malformed: Invalid \\escape")
    assert reason.endswith(f"; 1 complete record(s) before it kept, the {tail:,} bytes from it on not read (mend that "
                           "record and touch the file)")


def test_a_csv_header_with_spaces_after_its_commas_is_read(tmp_path):
    # a break test: "request_id, ts, provider, ..." made every row "unknown shape", the reason listing keys with their
    # leading spaces
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "u.csv").write_text("request_id, ts, provider, model, uncached_input_tokens, output_tokens\n"
                                             "s1,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,50,4\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted) == (1, 1)
    assert rows(conn, "select request_id, uncached_input_tokens from core.usage") == [("s1", 50)]


def test_a_gemini_stream_is_read_by_its_last_usage_and_json_lines_named_sse_are_named(tmp_path):
    # break tests: a Gemini alt=sse stream (every chunk carrying usageMetadata) was quarantined as "stream of 2 events
    # carries no usage", and JSON lines under a .sse name as "stream of 0 events carries no usage"
    chunk = lambda text, prompt, out: "data: " + json.dumps({  # noqa: E731
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}}], "modelVersion": "gemini-2.5-flash",
        "responseId": "g1", "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": out,
                                              "totalTokenCount": prompt + out}}) + "\r\n\r\n"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "g.sse").write_text(chunk("Hel", 1200, 2) + chunk("lo", 1200, 40))
    (tmp_path / "logs" / "lines.sse").write_text('{"a": 1}\n{"b": 2}\n')
    (tmp_path / "logs" / "source.yaml").write_text("ts: 2026-11-20T09:00:00Z\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert {r.source_file: (r.rows_in, r.rows_accepted) for r in results} == {"g.sse": (1, 1), "lines.sse": (1, 0)}
    assert rows(conn, "select provider, prompt_tokens, output_tokens from core.usage") == [("gemini", 1200, 40)]
    assert rows(conn, "select reason from core.quarantine") == [
        ("no data: events: not a server-sent-event stream (JSON lines belong in a .jsonl file)",)]


def test_a_csv_row_that_is_not_utf8_is_quarantined_and_a_bom_opening_a_later_jsonl_line_is_read(tmp_path):
    # break tests: a CSV byte that is not UTF-8 was stored as U+FFFD (a .jsonl line with one is quarantined), and files
    # joined with `cat`, each opening with a byte-order mark, had each later first line quarantined ("Unexpected UTF-8 BOM")
    (tmp_path / "logs").mkdir()
    header = b"request_id,ts,provider,model,tenant,uncached_input_tokens,output_tokens\n"
    (tmp_path / "logs" / "u.csv").write_bytes(header + b"c1,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,ac\xffme,50,4\n"
                                              b"c2,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,acme,50,4\n")
    line = lambda rid: json.dumps({"ts": "2026-11-20T09:00:00Z", "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": 5, "output_tokens": 5}}})
    bom = b"\xef\xbb\xbf"
    (tmp_path / "logs" / "joined.jsonl").write_bytes(bom + line("j1").encode() + b"\n" + bom + line("j2").encode() + b"\n")
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results} == {
        "joined.jsonl": (2, 2, 0), "u.csv": (2, 1, 1)}
    assert rows(conn, "select request_id, tenant from core.usage order by 1") == [("c2", "acme"), ("j1", "default"),
                                                                               ("j2", "default")]
    assert rows(conn, "select source_line, reason from core.quarantine") == [(2, "not UTF-8 text (invalid byte in the row)")]


def test_utf16_and_utf32_logs_are_read_as_their_utf8_text_line_for_line(tmp_path):
    # Windows PowerShell 5.1 writes UTF-16 LE with a byte-order mark for `>` and Out-File (Microsoft's
    # about_Character_Encoding): such a log had every record quarantined ("not UTF-8 text", "malformed JSON")
    import gzip

    line = lambda rid, tokens: json.dumps({"ts": "2026-11-20T09:00:00Z", "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929",
        "usage": {"input_tokens": tokens, "output_tokens": 5, "cache_read_input_tokens": 100}}})
    text = "\r\n".join([line("le1", 10), "", line("le2", 20)]) + "\r\n"  # a blank line: the numbers stay the file's
    csv_text = "request_id,ts,provider,model,tenant,uncached_input_tokens,output_tokens\nc1,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,acmé,50,4\n"
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "le.jsonl").write_bytes(text.encode("utf-16"))  # Python writes the mark in the machine's (LE) order
    (logs / "be.jsonl").write_bytes(b"\xfe\xff" + text.replace("le", "be").encode("utf-16-be"))
    (logs / "w32.jsonl.gz").write_bytes(gzip.compress(text.replace("le", "w32").encode("utf-32")))
    (logs / "t.csv").write_bytes(csv_text.encode("utf-16"))
    (logs / "a.json").write_bytes(json.dumps([json.loads(line("arr", 30))]).encode("utf-16"))
    conn, results = stage(tmp_path, logs)
    assert {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results} == {
        "le.jsonl": (2, 2, 0), "be.jsonl": (2, 2, 0), "w32.jsonl.gz": (2, 2, 0), "t.csv": (1, 1, 0), "a.json": (1, 1, 0)}
    assert rows(conn, "select request_id, source_line, uncached_input_tokens + cache_read_tokens, tenant from core.usage "
                      "order by 1") == [
        ("arr", 1, 130, "default"), ("be1", 1, 110, "default"), ("be2", 3, 120, "default"), ("c1", 2, 50, "acmé"),
        ("le1", 1, 110, "default"), ("le2", 3, 120, "default"), ("w321", 1, 110, "default"),
        ("w322", 3, 120, "default")]


def test_a_utf16_log_that_turns_bad_keeps_its_lines_before_and_quarantines_the_rest_as_one_record(tmp_path):
    line = lambda rid: json.dumps({"ts": "2026-11-20T09:00:00Z", "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": 5, "output_tokens": 5}}})
    good = ("\n".join([line("u1"), line("u2")]) + "\n").encode("utf-16")
    # a lone low surrogate (0xDC00, little-endian) halfway through line 3: not UTF-16 text
    bad = ('{"ts": "2026-11-20T09:00:00Z", "x": "'.encode("utf-16-le") + b"\x00\xdc" + '"}\n'.encode("utf-16-le")
           + (line("u4") + "\n").encode("utf-16-le"))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "turns.jsonl").write_bytes(good + bad)
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results] == [(3, 2, 1)]
    assert rows(conn, "select request_id from core.usage order by 1") == [("u1",), ("u2",)]
    assert rows(conn, "select source_line, reason from core.quarantine") == [
        (3, "not UTF-16 text (illegal encoding) after line 2; the rest of the file is unreadable")]


def test_utf8_logs_that_open_with_a_byte_order_mark_of_utf16_by_accident_stay_utf8_and_gz_in_any_case(tmp_path):
    # a break test: a UTF-8 log opening with FF FE (or FE FF, FF FE 00 00) was decoded whole as UTF-16 garbage, one
    # record, its sound lines lost; a CSV so became a header without rows (0 rows in); a UTF-16 `.Gz` lost every record
    import gzip

    line = lambda rid: json.dumps({"ts": "2026-11-20T09:00:00Z", "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929", "usage": {"input_tokens": 5, "output_tokens": 5}}})
    logs = tmp_path / "logs"
    logs.mkdir()
    for name, mark in (("le", b"\xff\xfe"), ("be", b"\xfe\xff"), ("w32", b"\xff\xfe\x00\x00")):
        (logs / f"{name}.jsonl").write_bytes(mark + b" garbage\n" + f"{line(name + '1')}\n{line(name + '2')}\n".encode())
    (logs / "c.csv").write_bytes(b"\xff\xfe\nrequest_id,ts,provider,model,uncached_input_tokens,output_tokens\n"
                                 b"c1,2026-11-20T09:00:00Z,openai,gpt-4.1-mini,50,4\n")
    (logs / "m.jsonl.Gz").write_bytes(gzip.compress(f"{line('gz1')}\n".encode("utf-16")))
    conn, results = stage(tmp_path, logs)
    counts = {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results}
    assert {k: v for k, v in counts.items() if k != "c.csv"} == {
        "le.jsonl": (3, 2, 1), "be.jsonl": (3, 2, 1), "w32.jsonl": (3, 2, 1), "m.jsonl.Gz": (1, 1, 0)}
    rows_in, accepted, quarantined = counts["c.csv"]  # read as UTF-8, as before: every row counted
    assert rows_in == accepted + quarantined >= 1
    assert rows(conn, "select request_id from core.usage order by 1") == [
        ("be1",), ("be2",), ("gz1",), ("le1",), ("le2",), ("w321",), ("w322",)]
    assert {r[0] for r in rows(conn, "select reason from core.quarantine where source_file like '%.jsonl'")} == {
        "not UTF-8 text (invalid byte at offset 0)"}
