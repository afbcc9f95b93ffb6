"""Latency and time to first token read into core.usage (latency_ms, ttft_ms, latency_issue).

The documented example of each format that logs latency (fixtures/formats) and a few records written
here in the shapes the sources document land with the milliseconds worked out by hand from their own
fields; a latency that cannot be used is left null and named, and its row is kept and billed as before.
"""

import json
import shutil
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from tests.conftest import REPO

FORMATS = REPO / "fixtures" / "formats"


def staged(tmp_path: Path, logs: Path, fast_lane: bool = True):
    """core.usage latency columns by (file, line, item), core.quarantine reasons, and the file accounting."""
    conn = warehouse.connect(tmp_path / f"w{int(fast_lane)}.duckdb")
    results = ingest.stage_logs(conn, logs, fast_lane=fast_lane, latest=datetime(2030, 1, 1, tzinfo=timezone.utc))
    usage = {(r[0], r[1], r[2]): r[3:] for r in conn.execute(
        "select source_file, source_line, source_item, latency_ms, ttft_ms, latency_issue, prompt_tokens from core.usage").fetchall()}
    reasons = conn.execute("select source_file, source_line, reason from core.quarantine order by all").fetchall()
    conn.close()
    return usage, reasons, {r.source_file: (r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results}


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("latency")
    for folder in ("litellm_spend_logs", "langfuse", "otel_genai", "bedrock_invocation_logs", "openai_compatible"):
        shutil.copytree(FORMATS / folder, tmp / "logs" / folder)
    return staged(tmp, tmp / "logs")[0]


ms = Decimal


@pytest.mark.parametrize("key, latency, ttft", [
    # LiteLLM spend log: endTime 10:42:21.904 - startTime 10:42:17.318; completionStartTime 10:42:18.771 - start
    (("litellm_spend_logs/spend_logs.jsonl", 1, 0), ms("4586"), ms("1453")),
    (("litellm_spend_logs/spend_logs.jsonl", 2, 0), ms("2472"), ms("693")),  # 16:08:54.512 / 52.733 - 52.040
    (("litellm_spend_logs/spend_logs.csv", 2, 0), ms("4586"), ms("1453")),  # the same row as a CSV export
    # Langfuse observation: endTime 09:12:45.877 - startTime 09:12:44.102 (latency 1.775 s); completionStartTime 44.690
    (("langfuse/observations.jsonl", 1, 0), ms("1775"), ms("588")),
    (("langfuse/observations.jsonl", 3, 0), ms("7674"), ms("6788")),  # 12:40:10.004 / 09.118 - 02.330
    # OTel span: endTimeUnixNano 1795169701930000128 - startTimeUnixNano 1795169700180000000 = 1,750.000128 ms
    (("otel_genai/spans.otlp.jsonl", 1, 1), ms("1750"), None),
    (("otel_genai/spans.otlp.jsonl", 2, 1), ms("2327"), None),  # ...632331000064 - ...630004000000
    # Bedrock invocation log: output.outputBodyJson.metrics.latencyMs
    (("bedrock_invocation_logs/invocations.jsonl", 1, 0), ms("1312"), None),
    # SGLang /generate: meta_info.e2e_latency 0.2417 s
    (("openai_compatible/self_hosted/sglang.jsonl", 2, 0), ms("241.7"), None),
])
def test_documented_examples_carry_their_latency_in_ms(examples, key, latency, ttft):
    assert examples[key][:3] == (latency, ttft, None)


def test_formats_that_log_no_latency_leave_it_null(examples):
    assert examples[("openai_compatible/self_hosted/vllm.jsonl", 1, 0)][:3] == (None, None, None)
    assert examples[("openai_compatible/openrouter.jsonl", 1, 0)][:3] == (None, None, None)


def otlp_span(start_ns: str, end_ns, ttft=None, ttft_key="gen_ai.response.time_to_first_chunk") -> dict:
    attributes = [{"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
                  {"key": "gen_ai.response.model", "value": {"stringValue": "gpt-4.1-mini"}},
                  {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "2400"}},
                  {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": "2048"}},
                  {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "90"}}]
    if ttft is not None:
        attributes.append({"key": ttft_key, "value": {"doubleValue": ttft}})
    span = {"traceId": "ab" * 16, "spanId": start_ns[-16:], "name": "chat gpt-4.1-mini", "kind": 3,
            "startTimeUnixNano": start_ns, "attributes": attributes}
    if end_ns is not None:
        span["endTimeUnixNano"] = end_ns
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"}, "spans": [span]}]}]}


def write_lines(path: Path, records: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def bedrock(latency) -> dict:
    return {"ts": "2026-11-20T12:00:00Z", "provider": "bedrock", "model": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
            "response": {"output": {}, "stopReason": "end_turn", "metrics": {"latencyMs": latency},
                         "usage": {"inputTokens": 20, "cacheReadInputTokens": 4000, "cacheWriteInputTokens": 0, "outputTokens": 30}}}


def litellm(start, first, end, duration=None) -> dict:
    row = {"request_id": f"ll-{start}", "spend": 0.001, "model": "gpt-4.1-mini", "custom_llm_provider": "openai",
           "startTime": start, "completionStartTime": first, "endTime": end,
           "metadata": {"usage_object": {"prompt_tokens": 1200, "completion_tokens": 20,
                                         "prompt_tokens_details": {"cached_tokens": 1024}}}}
    if duration is not None:
        row["request_duration_ms"] = duration
    return row


def langfuse(**times) -> dict:
    return {"id": f"lf-{sorted(times.items())}", "type": "GENERATION", "model": "gpt-4.1-mini",
            "startTime": "2026-11-20T09:00:00.000Z", "usageDetails": {"input": 100, "output": 10}, **times}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("latency_shapes")
    logs = tmp / "logs"
    write_lines(logs / "otel.jsonl", [
        otlp_span("1795169700000000000", "1795169703250000000", ttft=0.412),  # 3,250 ms; first chunk 0.412 s
        otlp_span("1795169710000000000", "1795169711000000000", ttft=0.8, ttft_key="gen_ai.response.time_to_first_token"),
        otlp_span("1795169720000000000", "1795169719000000000"),            # end before start
        otlp_span("1795169730000000000", "1795169731000000000", ttft=2.5),  # first token after the end
        otlp_span("1795169740000000000", "soon"),                           # unparsable end
    ])
    write_lines(logs / "bedrock.jsonl", [bedrock(1312), bedrock(-40), bedrock("fast")])
    write_lines(logs / "litellm.jsonl", [
        litellm("2026-11-20T10:00:00.000", "2026-11-20T10:00:00.250", "2026-11-20T10:00:01.500"),
        litellm("2026-11-20T11:00:02.000", "2026-11-20T11:00:01.000", "2026-11-20T11:00:01.500"),  # end before start
        litellm("2026-11-20T12:00:00.000", "later", "2026-11-20T12:00:00.900", duration=900),     # unparsable first token
    ])
    write_lines(logs / "langfuse.jsonl", [
        langfuse(latency=1.25, timeToFirstToken=0.5),                     # durations only, in seconds
        langfuse(completionStartTime="2026-11-20T08:59:59.000Z", latency="n/a"),  # first token before start
    ])
    (logs / "canonical.csv").write_text(
        "request_id,ts,provider,model,uncached_input_tokens,cache_read_tokens,output_tokens,latency_ms,ttft_ms\n"
        "c-1,2026-11-20T09:00:00Z,anthropic,claude-sonnet-4-5,50,2000,40,812.5,301\n"
        "c-2,2026-11-20T09:00:01Z,anthropic,claude-sonnet-4-5,50,2000,40,-1,\n", encoding="utf-8")
    return staged(tmp, logs)


@pytest.mark.parametrize("key, latency, ttft, issue", [
    (("otel.jsonl", 1, 1), ms("3250"), ms("412"), None),
    (("otel.jsonl", 2, 1), ms("1000"), ms("800"), None),  # Sentry's spelling
    (("bedrock.jsonl", 1, 0), ms("1312"), None, None),    # Converse metrics.latencyMs (fast lane)
    (("litellm.jsonl", 1, 0), ms("1500"), ms("250"), None),
    (("langfuse.jsonl", 1, 0), ms("1250"), ms("500"), None),
    (("canonical.csv", 2, 0), ms("812.5"), ms("301"), None),
])
def test_documented_shapes_land_exactly(written, key, latency, ttft, issue):
    assert written[0][key][:3] == (latency, ttft, issue)


@pytest.mark.parametrize("key, latency, ttft, issue", [
    (("otel.jsonl", 3, 1), None, None, "end before start (latency -1000.000 ms)"),
    (("otel.jsonl", 4, 1), ms("1000"), None, "first token after the end (2500.000 ms > latency 1000.000 ms)"),
    (("otel.jsonl", 5, 1), None, None, "end time is not an integer of nanoseconds (\"soon\")"),
    (("bedrock.jsonl", 2, 0), None, None, "end before start (latency -40.000 ms)"),
    (("bedrock.jsonl", 3, 0), None, None, "latency is not a number (\"fast\")"),
    (("litellm.jsonl", 2, 0), None, None, "end before start (latency -500.000 ms); first token before start (-1000.000 ms)"),
    (("litellm.jsonl", 3, 0), ms("900"), None, "first-token time is not an ISO-8601 instant (\"later\")"),
    (("langfuse.jsonl", 2, 0), None, None,
     "latency is not a number (\"n/a\"); first token before start (-1000.000 ms)"),
    (("canonical.csv", 3, 0), None, None, "end before start (latency -1.000 ms)"),
])
def test_a_bad_latency_is_left_null_and_named_and_its_row_kept(written, key, latency, ttft, issue):
    usage, reasons, _ = written
    assert usage[key][:3] == (latency, ttft, issue)
    assert usage[key][3] > 0  # the row is billed as before


def test_no_row_is_quarantined_for_its_latency(written):
    usage, reasons, files = written
    assert reasons == []
    assert files == {"otel.jsonl": (5, 5, 0), "bedrock.jsonl": (3, 3, 0), "litellm.jsonl": (3, 3, 0),
                     "langfuse.jsonl": (2, 2, 0), "canonical.csv": (2, 2, 0)}


def test_the_general_normaliser_gives_the_fast_lane_values(tmp_path, written):
    logs = tmp_path / "logs"
    write_lines(logs / "bedrock.jsonl", [bedrock(1312), bedrock(-40), bedrock("fast"), bedrock(0)])
    fast, general = staged(tmp_path, logs, True), staged(tmp_path, logs, False)
    assert fast == general
    assert [fast[0][("bedrock.jsonl", n, 0)][0] for n in (1, 4)] == [ms("1312"), ms("0")]
