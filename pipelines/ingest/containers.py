"""Reshape records that are not one usage item each: container pages and streamed transcripts.

Most records are one usage item (a response body or an envelope around one); the SQL field map
reads those directly. Four shapes carry several items, or one item spread over events:

* OpenAI organisation Usage API pages and buckets (``{"object": "page", "data": [bucket]}``,
  ``{"object": "bucket", "start_time", "results": [...]}``): one item per completions result, with
  the bucket's ``start_time`` / ``end_time`` (epoch seconds) copied in as ``bucket_start_time`` /
  ``bucket_end_time`` (``reference/providers.md`` section 1.2).
* Anthropic Admin usage-report pages and buckets (``{"data": [{"starting_at", "results"}]}``): one
  item per result with ``starting_at`` / ``ending_at`` copied in (section 3.2).
* OTLP/JSON trace batches (the collector file exporter: ``resourceSpans`` -> ``scopeSpans`` ->
  ``spans``): one item ``{"otel_span": {...}}`` per span that carries token usage
  (``gen_ai.usage.*`` or OpenInference ``llm.token_count.*`` attributes), with its attributes and
  the resource's flattened to objects (OTLP encodes int64 values as strings; they become numbers).
  Spans without token usage (HTTP, tool, retrieval spans) are not usage records and are skipped.
* Streamed responses (``{"stream_events": [...]}``, or an envelope whose ``response_sse`` is the
  raw server-sent-event text): folded into the final body the provider would have returned
  without streaming. OpenAI Chat: the chunk that carries ``usage`` (``stream_options.include_usage``);
  OpenAI Responses: ``response.completed``'s ``response``; Anthropic: ``message_start``'s message
  with the ``usage`` of every later ``message_delta`` laid over it (its ``output_tokens`` is the
  cumulative count, section 3.1).

Why Python: each of these needs a tree walk or an ordered fold over events, which SQL expresses
poorly; only lines passing a cheap vectorised substring prefilter are parsed here, every other line
goes to the SQL untouched. Items keep their position as ``(source_line, source_item)``: item 0 is
a whole line, items 1..n are the n-th usage item of a container line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

# a line that may need reshaping mentions one of these keys; everything else passes through as is
_PREFILTER = r'"(resourceSpans|results|meta|has_more|stream_events|response_sse|object"\s*:\s*"(page|bucket))"'
TOKEN_ATTRIBUTE_PREFIXES = ("gen_ai.usage.", "llm.token_count.")
_INT64 = re.compile(r"-?[0-9]{1,19}")


def reshape(chunk: pa.Table) -> pa.Table:
    """``(source_line, line)`` records -> ``(source_line, source_item, line)`` usage items.

    Lines that are not containers or streams keep ``source_item = 0`` and their text. A container
    whose pages hold no items (an empty day) yields nothing; a line that fails to parse here is
    passed on unchanged so the SQL quarantines it with its usual reason.
    """
    candidates = pc.match_substring_regex(chunk["line"], _PREFILTER)
    if not pc.any(candidates).as_py():
        return chunk.append_column("source_item", pa.array([0] * chunk.num_rows, pa.int32()))
    lines_out, items_out, texts_out = [], [], []
    flags = candidates.to_pylist()
    for line_no, text, flag in zip(chunk["source_line"].to_pylist(), chunk["line"].to_pylist(), flags):
        produced = _reshape_line(text) if flag else None
        if produced is None:
            lines_out.append(line_no)
            items_out.append(0)
            texts_out.append(text)
            continue
        items, numbered = produced
        for index, item in enumerate(items, start=1):
            lines_out.append(line_no)
            items_out.append(index if numbered else 0)
            texts_out.append(json.dumps(item, separators=(",", ":")))
    return pa.table({"source_line": pa.array(lines_out, pa.int64()), "line": pa.array(texts_out, pa.string()),
                     "source_item": pa.array(items_out, pa.int32())})


def _reshape_line(text: str) -> tuple[list[dict], bool] | None:
    """``(items, numbered)`` of one line, or None when it is an ordinary record (or not parseable).

    ``numbered``: the items are parts of a container (positions 1..n) rather than the line itself.
    """
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("resourceSpans"), list):
        return list(otel_items(record)), True
    if record.get("object") in ("page", "bucket") or _looks_like_anthropic_report(record):
        items = list(bucket_items(record))
        return (items, True) if items or _is_empty_report(record) else None
    if isinstance(record.get("data"), list) and isinstance(record.get("meta"), dict):
        # an API list page (Langfuse GET /api/public/observations): one item per element
        return [d if isinstance(d, dict) else {"invalid_item": d} for d in record["data"]], True
    if isinstance(record.get("stream_events"), list) or isinstance(record.get("response_sse"), str):
        return [fold_stream(record)], False
    return None


# ---- usage reports (OpenAI organisation Usage API, Anthropic Admin usage report) ----------------

def _looks_like_anthropic_report(record: dict) -> bool:
    data = record.get("data")
    if isinstance(data, list):
        if not data:  # an empty page of a paginated report (has_more / next_page beside it)
            return "has_more" in record or "next_page" in record
        return any(isinstance(b, dict) and "starting_at" in b for b in data) and all(
            isinstance(b, dict) and "results" in b for b in data)
    return "starting_at" in record and "results" in record


def _is_empty_report(record: dict) -> bool:
    """A report page or bucket with no results at all (a quiet day): no items, nothing to quarantine."""
    buckets = record.get("data") if isinstance(record.get("data"), list) else [record]
    return all(isinstance(b, dict) and isinstance(b.get("results"), list) and not b["results"] for b in buckets)


def bucket_items(record: dict) -> Iterable[dict]:
    """One item per result of every bucket, with the bucket's time range copied in.

    A bucket that is not an object or whose ``results`` is not a list becomes one ``invalid_bucket``
    item, so it is quarantined and counted rather than dropped.
    """
    buckets = record.get("data") if isinstance(record.get("data"), list) else [record]
    for bucket in buckets:
        if not isinstance(bucket, dict) or not isinstance(bucket.get("results"), list):
            yield {"invalid_bucket": "bucket is not an object with a results list"}
            continue
        for result in bucket["results"]:
            if not isinstance(result, dict):
                result = {"invalid_result": result}
            if "starting_at" in bucket:  # Anthropic: RFC 3339 bucket bounds
                yield {**result, "starting_at": bucket.get("starting_at"), "ending_at": bucket.get("ending_at")}
            else:  # OpenAI: epoch-second bucket bounds
                yield {**result, "bucket_start_time": bucket.get("start_time"), "bucket_end_time": bucket.get("end_time")}


# ---- OpenTelemetry OTLP/JSON ------------------------------------------------------------------

def otel_items(record: dict) -> Iterable[dict]:
    """One ``{"otel_span": ...}`` item per span with token-usage attributes."""
    for resource_spans in _dicts(record.get("resourceSpans")):
        resource_object = resource_spans.get("resource")
        resource = _attributes(resource_object.get("attributes") if isinstance(resource_object, dict) else None)
        for scope_spans in _dicts(resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans")):
            for span in _dicts(scope_spans.get("spans")):
                attributes = _attributes(span.get("attributes"))
                if not any(k.startswith(TOKEN_ATTRIBUTE_PREFIXES) for k in attributes):
                    continue
                yield {"otel_span": {"attributes": attributes, "resource": resource, "name": span.get("name"),
                                     "traceId": span.get("traceId"), "spanId": span.get("spanId"),
                                     "startTimeUnixNano": span.get("startTimeUnixNano"),
                                     "endTimeUnixNano": span.get("endTimeUnixNano")}}


def _dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _attributes(pairs) -> dict:
    """OTLP ``[{key, value: {stringValue|intValue|doubleValue|boolValue}}]`` -> ``{key: value}``.

    ``intValue`` is a string in OTLP/JSON (proto3 JSON maps int64 to strings); it becomes an int
    when it is exactly a decimal integer (ASCII digits, optional minus), else stays as given so the SQL
    reports it as an invalid count.
    """
    out = {}
    for pair in _dicts(pairs):
        value = pair.get("value") if isinstance(pair.get("value"), dict) else {}
        if "intValue" in value:
            raw = value["intValue"]
            if isinstance(raw, str) and _INT64.fullmatch(raw):
                out[pair.get("key")] = int(raw)
            else:
                out[pair.get("key")] = raw
        else:
            for kind in ("stringValue", "doubleValue", "boolValue"):
                if kind in value:
                    out[pair.get("key")] = value[kind]
                    break
    return {k: v for k, v in out.items() if isinstance(k, str)}


# ---- streamed responses -------------------------------------------------------------------------

def parse_sse(text: str) -> list:
    """The JSON ``data:`` payloads of a server-sent-event transcript, in order (``[DONE]`` dropped).

    A payload that is not JSON is kept as a string, so the fold can say what was wrong.
    """
    events, data_lines = [], []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") + [""]:
        if raw.startswith("data:"):
            data_lines.append(raw[5:].removeprefix(" "))
        elif raw == "" and data_lines:
            payload = "\n".join(data_lines)
            data_lines = []
            if payload.strip() == "[DONE]":
                continue
            try:
                events.append(json.loads(payload))
            except (ValueError, RecursionError):
                events.append(payload[:200])
    return events


def fold_stream(record: dict) -> dict:
    """The final body of a streamed response, kept inside the record's envelope when it has one.

    Returns ``{"stream_error": reason}`` in place of the body when the stream has no usage (for
    example an OpenAI stream recorded without ``include_usage``), so the SQL quarantines it.
    """
    events = record["stream_events"] if isinstance(record.get("stream_events"), list) else parse_sse(record["response_sse"])
    body = {**_fold_events([e for e in events if isinstance(e, dict)]), "_stream": True}
    envelope = {k: v for k, v in record.items() if k not in ("stream_events", "response_sse")}
    return {**envelope, "response": body} if envelope else body


def _fold_events(events: list[dict]) -> dict:
    start = next((e for e in events if e.get("type") == "message_start" and isinstance(e.get("message"), dict)), None)
    if start is not None:  # Anthropic Messages stream
        message = dict(start["message"])
        if not isinstance(message.get("usage"), dict):
            return {"stream_error": "message_start carries no usage object"}
        usage = dict(message["usage"])
        for event in events:
            if event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
                usage.update({k: v for k, v in event["usage"].items() if v is not None})
        return {**message, "usage": usage}
    completed = next((e["response"] for e in reversed(events)  # Responses: completed, or cut short but billed
                      if e.get("type") in ("response.completed", "response.incomplete", "response.failed")
                      and isinstance(e.get("response"), dict) and isinstance(e["response"].get("usage"), dict)), None)
    if completed is not None:  # OpenAI Responses stream
        return completed
    with_usage = next((e for e in reversed(events) if isinstance(e.get("usage"), dict)), None)
    if with_usage is not None:  # OpenAI Chat Completions stream (include_usage) and compatible servers
        return with_usage
    return {"stream_error": f"stream of {len(events)} events carries no usage "
                            "(OpenAI: record with stream_options.include_usage; Anthropic: message_start missing)"}
