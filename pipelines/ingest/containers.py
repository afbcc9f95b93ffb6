"""Reshape records that are not one usage item each: container pages and streamed transcripts.

Most records are one usage item (a response body or an envelope around one); the general normaliser
(``sql/ingest/shaped_items__create.sql`` and the per-format statements generated from ``formats.yaml``)
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

* Coding-agent session transcripts. Claude Code (``~/.claude/projects/<project>/<session>.jsonl``):
  an ``assistant`` line whose ``message`` carries ``usage`` is a usage item as it stands (format
  ``claude_code_transcript``); the transcript's other lines (user turns, tool results, summaries,
  file-history snapshots) carry no tokens and are skipped, as spans without usage are. Codex CLI
  (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): an ordered fold over the file (state kept across
  chunks in the caller's ``state`` dict): ``session_meta`` names the session, ``turn_context`` the
  model, and each ``event_msg`` ``token_count`` with ``info`` becomes one item
  ``{"timestamp", "codex_token_count": {"id", "model", "turn"}}`` whose ``turn`` is that turn's usage:
  ``last_token_usage``, else the change of the cumulative ``total_token_usage`` since the previous event
  (ccusage's Codex parser). Its id is the session and the cumulative total, so an event that repeats the
  previous totals is a snapshot of the same turn, collapsed by the SQL
  (``sql/ingest/staged_items__supersede_snapshots.sql``); every other rollout line is skipped.

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
_PREFILTER = (r'"(resourceSpans|results|meta|has_more|stream_events|response_sse|object"\s*:\s*"(page|bucket)|sessionId|leafUuid'
              r'|type"\s*:\s*"(session_meta|turn_context|event_msg|response_item|compacted))"')
TOKEN_ATTRIBUTE_PREFIXES = ("gen_ai.usage.", "llm.token_count.")
_INT64 = re.compile(r"-?[0-9]{1,19}")


def reshape(chunk: pa.Table, state: dict | None = None) -> pa.Table:
    """``(source_line, line)`` records -> ``(source_line, source_item, line)`` usage items.

    ``state``: one file's running transcript state, passed again with each of its chunks in line order
    (a Codex rollout's session, model and previous totals); None: a fresh one per call.

    Lines that are not containers or streams keep ``source_item = 0`` and their text. A container
    whose pages hold no items (an empty day) yields nothing; a line that fails to parse here is
    passed on unchanged so the SQL quarantines it with its usual reason.
    """
    candidates = pc.match_substring_regex(chunk["line"], _PREFILTER)
    if not pc.any(candidates).as_py():
        return chunk.append_column("source_item", pa.array([0] * chunk.num_rows, pa.int32()))
    lines_out, items_out, texts_out = [], [], []
    flags = candidates.to_pylist()
    state = {} if state is None else state
    for line_no, text, flag in zip(chunk["source_line"].to_pylist(), chunk["line"].to_pylist(), flags):
        produced = _reshape_line(text, state) if flag else None
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


def _reshape_line(text: str, state: dict) -> tuple[list[dict], bool] | None:
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
    if record.get("type") in CODEX_LINE_TYPES and isinstance(record.get("payload"), dict):
        item = codex_item(record, state)
        return ([item] if item is not None else []), False
    if record.get("type") in CLAUDE_CODE_LINE_TYPES and ("uuid" in record or "leafUuid" in record or "messageId" in record):
        message = record.get("message")
        if record["type"] == "assistant" and isinstance(message, dict) and isinstance(message.get("usage"), dict):
            return None  # a usage item as it stands (claude_code_transcript)
        return [], True  # a transcript line without usage: not a record
    return None


# ---- coding-agent session transcripts ------------------------------------------------------------

# Claude Code transcript line types (ccusage's Claude loader; the transcripts under ~/.claude/projects)
CLAUDE_CODE_LINE_TYPES = ("assistant", "user", "system", "summary", "file-history-snapshot", "queue-operation")
# Codex CLI rollout line types (codex-rs RolloutItem: session_meta, response_item, compacted, turn_context, event_msg)
CODEX_LINE_TYPES = ("session_meta", "turn_context", "event_msg", "response_item", "compacted")


def codex_item(record: dict, state: dict) -> dict | None:
    """The usage item of one Codex rollout line, or None for a line that carries none (updating ``state``).

    A turn's usage is ``info.last_token_usage``; where only the cumulative ``info.total_token_usage`` is
    written it is the change since the previous event's totals (ccusage's Codex parser), each count
    subtracted as given: a count that is not a whole number is passed on unchanged for the SQL to reject,
    and a total that went down gives a negative count, rejected too (nothing is clamped).
    """
    payload = record["payload"]
    if record["type"] == "session_meta":
        state["session"] = payload.get("id")
        return None
    if record["type"] == "turn_context":
        if isinstance(payload.get("model"), str):
            state["model"] = payload["model"]
        return None
    if record["type"] != "event_msg" or payload.get("type") != "token_count" or not isinstance(payload.get("info"), dict):
        return None  # messages, tool calls, rate-limit-only token_count events: no usage
    info = payload["info"]
    totals = info.get("total_token_usage") if isinstance(info.get("total_token_usage"), dict) else None
    last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else None
    previous = state.get("totals") or {}
    if last is not None:
        turn = last
    elif totals is not None:
        turn = {k: (v - previous.get(k, 0) if _whole(v) and _whole(previous.get(k, 0)) else v) for k, v in totals.items()}
    else:
        turn = None
    if totals is not None:
        state["totals"] = totals
    session = state.get("session")
    cumulative = totals.get("total_tokens") if totals is not None else None
    return {"timestamp": record.get("timestamp"),
            "codex_token_count": {
                "id": f"codex:{session}:{cumulative}" if session is not None and _whole(cumulative) else None,
                "model": state.get("model") or info.get("model"),
                "turn": turn}}


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
            if payload.strip() in ("[DONE]", ""):
                continue
            try:
                events.append(json.loads(payload))
            except (ValueError, RecursionError):
                events.append(payload[:200])
    return events


def fold_stream(record: dict) -> dict:
    """The final body of a streamed response, kept inside the record's envelope when it has one.

    Returns ``{"stream_error": reason}`` in place of the body when the stream has no usage (for
    example an OpenAI stream recorded without ``include_usage``) or is damaged (an event that is not JSON, an
    Anthropic stream without its closing usage), so the SQL quarantines it.
    """
    events = record["stream_events"] if isinstance(record.get("stream_events"), list) else parse_sse(record["response_sse"])
    damaged = next((n for n, e in enumerate(events, start=1) if isinstance(e, str)), None)
    # a break test: an Anthropic stream whose message_delta was cut mid-JSON was accepted with message_start's
    # placeholder output count (1 token for 4,000); the payload is not quoted (it may hold the response's text)
    body = ({"stream_error": f"event {damaged} of {len(events)} is not JSON: the stream was cut short or damaged, so "
                             "its usage cannot be told"} if damaged is not None
            else _fold_events([e for e in events if isinstance(e, dict)]))
    body = {**body, "_stream": True}
    envelope = {k: v for k, v in record.items() if k not in ("stream_events", "response_sse")}
    return {**envelope, "response": body} if envelope else body


def _fold_events(events: list[dict]) -> dict:
    start = next((e for e in events if e.get("type") == "message_start" and isinstance(e.get("message"), dict)), None)
    if start is not None:  # Anthropic Messages stream
        message = dict(start["message"])
        if not isinstance(message.get("usage"), dict):
            return {"stream_error": "message_start carries no usage object"}
        usage = dict(message["usage"])
        deltas = [e["usage"] for e in events if e.get("type") == "message_delta" and isinstance(e.get("usage"), dict)]
        if not deltas:  # message_start's output_tokens is a placeholder; the bill is in the closing message_delta
            return {"stream_error": "Anthropic stream without a message_delta carrying usage: cut short after "
                                    "message_start, whose output count is a placeholder"}
        for delta in deltas:
            usage.update({k: v for k, v in delta.items() if v is not None})
        return {**message, "usage": usage}
    completed = next((e["response"] for e in reversed(events)  # Responses: completed, or cut short but billed
                      if e.get("type") in ("response.completed", "response.incomplete", "response.failed")
                      and isinstance(e.get("response"), dict) and isinstance(e["response"].get("usage"), dict)), None)
    if completed is not None:  # OpenAI Responses stream
        return completed
    with_usage = next((e for e in reversed(events) if isinstance(e.get("usage"), dict)), None)
    if with_usage is not None:  # OpenAI Chat Completions stream (include_usage) and compatible servers
        return with_usage
    # Gemini's streamGenerateContent (alt=sse): each chunk a GenerateContentResponse, the last one's usageMetadata the
    # whole response's (ai.google.dev, "Stream responses"; a break test: "carries no usage" though every event did)
    gemini = next((e for e in reversed(events) if isinstance(e.get("usageMetadata"), dict)), None)
    if gemini is not None:
        return gemini
    if not events:  # (a break test: JSON lines named .sse said "stream of 0 events carries no usage")
        return {"stream_error": "no data: events: not a server-sent-event stream (JSON lines belong in a .jsonl file)"}
    return {"stream_error": f"stream of {len(events)} events carries no usage "
                            "(OpenAI: record with stream_options.include_usage; Anthropic: message_start missing)"}
