"""Container splitting and stream folding (lib/containers.py)."""

import json

import pyarrow as pa

from pipelines.ingest import containers


def chunk(*records) -> pa.Table:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    return pa.table({"source_line": pa.array(range(1, len(lines) + 1), pa.int64()), "line": lines})


def test_ordinary_records_pass_through_as_item_zero():
    out = containers.reshape(chunk({"usage": {"prompt_tokens": 1}}, "not json {"))
    assert out["source_item"].to_pylist() == [0, 0] and out["line"].to_pylist()[1] == "not json {"


def test_otlp_batches_yield_one_item_per_span_with_usage_and_int64_strings_become_numbers():
    # OTLP/JSON encodes int64 attribute values as strings (opentelemetry-proto, JSON mapping)
    def span(name, attrs):
        return {"name": name, "traceId": "t", "spanId": name, "startTimeUnixNano": "1795169700180000000",
                "attributes": [{"key": k, "value": v} for k, v in attrs.items()]}

    batch = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bot"}}]},
                                "scopeSpans": [{"spans": [
                                    span("http", {"http.route": {"stringValue": "/x"}}),
                                    span("chat", {"gen_ai.usage.input_tokens": {"intValue": "2204"},
                                                  "gen_ai.provider.name": {"stringValue": "openai"}})]}]}]}
    out = containers.reshape(chunk(batch))
    assert out["source_item"].to_pylist() == [1]
    item = json.loads(out["line"][0].as_py())["otel_span"]
    assert item["attributes"] == {"gen_ai.usage.input_tokens": 2204, "gen_ai.provider.name": "openai"}
    assert item["resource"] == {"service.name": "bot"} and item["startTimeUnixNano"] == "1795169700180000000"


def test_usage_pages_split_into_results_with_their_bucket_time_and_empty_pages_yield_nothing():
    page = {"object": "page", "data": [{"object": "bucket", "start_time": 100, "end_time": 200,
                                         "results": [{"input_tokens": 1}, {"input_tokens": 2}]},
                                        {"object": "bucket", "start_time": 200, "end_time": 300, "results": []}]}
    report = {"data": [{"starting_at": "2026-11-20T00:00:00Z", "ending_at": "2026-11-21T00:00:00Z",
                        "results": [{"uncached_input_tokens": 5}]}], "has_more": False}
    empty = {"data": [{"starting_at": "2026-11-20T00:00:00Z", "results": []}]}
    out = containers.reshape(chunk(page, report, empty))
    assert list(zip(out["source_line"].to_pylist(), out["source_item"].to_pylist())) == [(1, 1), (1, 2), (2, 1)]
    items = [json.loads(x) for x in out["line"].to_pylist()]
    assert items[1] == {"input_tokens": 2, "bucket_start_time": 100, "bucket_end_time": 200}
    assert items[2]["starting_at"] == "2026-11-20T00:00:00Z"


def test_anthropic_stream_lays_each_message_delta_usage_over_message_start():
    # Anthropic streaming: message_delta.usage.output_tokens is cumulative (providers.md section 3.1)
    sse = ('event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5",'
           '"usage":{"input_tokens":4,"cache_read_input_tokens":2455,"output_tokens":1}}}\n\n'
           'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":10}}\n\n'
           'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":23}}\n\n'
           'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    body = containers.fold_stream({"ts": "2026-11-20T00:00:00Z", "response_sse": sse})
    assert body["ts"] == "2026-11-20T00:00:00Z"
    assert body["response"]["usage"] == {"input_tokens": 4, "cache_read_input_tokens": 2455, "output_tokens": 23}


def test_openai_stream_takes_the_include_usage_chunk_and_a_stream_without_usage_says_so():
    chunks = [{"object": "chat.completion.chunk", "choices": [{"delta": {"content": "hi"}}], "usage": None},
              {"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}]
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    assert containers.fold_stream({"response_sse": text})["usage"] == {"prompt_tokens": 9, "completion_tokens": 2}
    assert "include_usage" in containers.fold_stream({"stream_events": chunks[:1]})["stream_error"]
