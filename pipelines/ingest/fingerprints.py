"""Fingerprints of logged request bodies: hashes, lengths and character-class shapes, never text.

When a log envelope carries the request (``"request": {...}``), the prompt is rendered to one text
in the order the provider caches it: system prompt (OpenAI ``system``/``developer`` messages or
Responses ``instructions``, Anthropic ``system``, Gemini ``systemInstruction``, Bedrock ``system``),
then the tools list as canonical JSON (sorted keys), then the messages' text. From that text only
these are kept:

* ``system_sha`` / ``tools_sha``: hashes of the canonical system prompt and tools list;
* ``opening_hashes``: hashes of the leading ``OPENING_BOUNDARIES_CHARS`` characters (one per boundary
  the text reaches), so two requests share an opening exactly as far as their hashes agree;
* ``rendered_chars``: the text's length in characters (about 4 characters per token in English
  prose; ``CHARS_PER_TOKEN`` is that estimate);
* compared with the previous request of the same (tenant, app) in the same file: the offset where
  the two texts first differ (``divergence_offset_chars``) and a shape description of this
  request's differing span (``describe_span``), e.g. "digits and separators, 24 chars: looks like a
  timestamp".

Privacy: nothing here returns or stores any of the text itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

import orjson

OPENING_BOUNDARIES_CHARS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
FAMILY_CHARS = 512  # the prefix family of a request with a body: hash of its first 512 characters
# (OPENING_BOUNDARIES_CHARS[1], so the family is the second opening hash when the text reaches it)
CHARS_PER_TOKEN = 4  # estimate used to express character offsets in tokens
RESYNC_WINDOW = 512  # characters after the first difference searched for where the texts agree again
RESYNC_RUN = 16  # characters that must agree for the texts to count as realigned
_PREFIX_BLOCK = 4096  # characters compared at a time when looking for the first difference
_ANCHOR = RESYNC_RUN // 2  # every run of RESYNC_RUN characters contains a piece this long starting at a multiple of it


@dataclass(frozen=True)
class Fingerprint:
    """What is kept of one request body (hashes and lengths only)."""

    system_sha: str | None
    tools_sha: str | None
    opening_hashes: list[str]
    rendered_chars: int
    family: str


def short_sha(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``text``'s UTF-8 (lone surrogates passed through)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _text(value) -> str:
    """Text of a content value: a string, a list of parts, a part with ``text`` / ``parts``, else the
    block's canonical JSON (thinking and tool blocks are part of the cached prefix too)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        for key in ("parts", "content"):
            if key in value:
                return _text(value[key])
        # thinking, tool-use, image blocks: they sit in the cached prefix too, so they count canonically
        return canonical_json(value)
    return str(value)


def canonical_json(value) -> str:
    """Sorted-key JSON without spaces (``json.dumps``' escaping): how a tools list enters the rendered text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def render(request: dict, tools_canonical=canonical_json) -> tuple[str, str, str]:
    """``(system_text, tools_json, rendered_text)`` of a request body in cache order.

    ``tools_canonical`` turns the tools list into its text (``canonical_json``; a caller may pass one that
    remembers the answers for tools lists it has seen). Raises ``TypeError`` when ``request`` is not a
    JSON object.
    """
    if not isinstance(request, dict):
        raise TypeError(f"request body must be a JSON object, got {type(request).__name__}")
    messages = request.get("messages") or request.get("contents") or []
    if not isinstance(messages, list):
        messages = []
    system_parts = [_text(request.get(k)) for k in ("instructions", "system", "systemInstruction", "system_instruction")]
    conversation = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            system_parts.append(_text(message.get("content")))
        else:
            conversation.append(_text(message.get("content", message.get("parts")) if isinstance(message, dict) else message))
    if isinstance(request.get("input"), (str, list)):  # OpenAI Responses
        conversation.append(_text(request["input"]))
    tool_config = request.get("toolConfig")  # Bedrock Converse; a logged value of another shape holds no tools
    tools = request.get("tools") or (tool_config.get("tools") if isinstance(tool_config, dict) else None)
    tools_json = tools_canonical(tools) if tools else ""
    system = "".join(system_parts)
    return system, tools_json, system + tools_json + "".join(conversation)


def fingerprint(request: dict) -> Fingerprint:
    """Hashes and length of a request body's rendered prompt (see the module docstring)."""
    return from_rendered(*render(request))


def from_rendered(system: str, tools_json: str, text: str) -> Fingerprint:
    """The fingerprint of an already rendered prompt (``render``'s three parts)."""
    openings = opening_hashes(text)
    return Fingerprint(
        system_sha=short_sha(system) if system else None,
        tools_sha=short_sha(tools_json) if tools_json else None,
        opening_hashes=openings,
        rendered_chars=len(text),
        family=family_of(openings, text),
    )


def family_of(openings: list[str], text: str) -> str:
    """The prefix family of a rendered text whose opening hashes are ``openings``: its first ``FAMILY_CHARS``' hash."""
    return "fp:" + (openings[1] if len(openings) > 1 else short_sha(text[:FAMILY_CHARS]))


def opening_hashes(text: str) -> list[str]:
    """``short_sha(text[:b])`` for each of ``OPENING_BOUNDARIES_CHARS`` the text reaches, in one pass (``opening_states``)."""
    return opening_states(text)[0]


def opening_states(text: str, reuse: int = 0, previous: tuple[list[str], list] | None = None) -> tuple[list[str], list]:
    """``(opening_hashes(text), states)``: the hashes and the running SHA-256 after each boundary reached.

    One running SHA-256 is fed the text boundary by boundary and copied at each, so the leading
    32,768 characters are encoded and hashed once (hashing each prefix anew cost twice the bytes, and
    an encode per prefix). UTF-8 (with surrogatepass) encodes character by character, so the pieces'
    bytes are the prefix's bytes and the hashes are ``short_sha``'s. With ``reuse`` = k and ``previous`` =
    another text's ``(hashes, states)``, the first k boundaries are taken from it: right when the two
    texts agree on their first ``OPENING_BOUNDARIES_CHARS[k - 1]`` characters (consecutive requests of
    one app share their system prompt and tools, so most of the hashing is skipped).
    """
    if reuse:
        hashes, states = previous[0][:reuse], previous[1][:reuse]
        running, done = states[-1].copy(), OPENING_BOUNDARIES_CHARS[reuse - 1]
    else:
        hashes, states, running, done = [], [], hashlib.sha256(), 0
    for boundary in OPENING_BOUNDARIES_CHARS[reuse:]:
        if len(text) < boundary:
            break
        running.update(text[done:boundary].encode("utf-8", "surrogatepass"))
        done = boundary
        states.append(running.copy())  # never updated again: a later text may continue from it
        hashes.append(running.hexdigest()[:16])
    return hashes, states


def divergence(previous: str, current: str, start: int | None = None) -> tuple[int, str]:
    """Where ``current`` first differs from ``previous`` and the shape of its changing value.

    The differing region (from the first differing character to where the two texts agree again on
    ``RESYNC_RUN`` characters, looked for within ``RESYNC_WINDOW``) is widened to the whole whitespace-delimited value it sits in, so a timestamp whose
    leading digits happen to agree is still described (and located) as the whole timestamp. Returns
    ``(offset_chars, description)``; the offset is where that value starts. ``start``, when given, is
    ``common_prefix_chars(previous, current)`` already measured by the caller.
    """
    limit = min(len(previous), len(current))
    if start is None:
        start = common_prefix_chars(previous, current)
    if start == limit:  # identical, or one text simply continues the other
        return start, "identical" if len(previous) == len(current) else describe_span(current[start:])
    end = start + _realign(previous[start:start + RESYNC_WINDOW], current[start:start + RESYNC_WINDOW])
    start, end = _widen(current, start, end)
    return start, describe_span(current[start:end].rstrip(".:"))


def common_prefix_chars_reference(previous: str, current: str) -> int:
    """How many leading characters the two texts share (``common_prefix_chars``, in Python).

    Blocks of ``_PREFIX_BLOCK`` characters are compared until one differs, then a binary search over
    slice comparisons inside it (each one C-level memory compare), not a loop over characters: logged
    prompts share thousands of leading characters, and a Python loop over them cost about 0.7 ms per
    request (a binary search over the whole texts copied about 30 slices of up to their length).
    """
    limit = min(len(previous), len(current))
    low = 0
    while low + _PREFIX_BLOCK <= limit and previous[low:low + _PREFIX_BLOCK] == current[low:low + _PREFIX_BLOCK]:
        low += _PREFIX_BLOCK
    base, high = low, min(low + _PREFIX_BLOCK, limit)  # the texts agree before base
    while low < high:
        middle = (low + high + 1) // 2
        if previous[base:middle] == current[base:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def realign_reference(previous: str, current: str) -> int:
    """Characters of ``current`` before the two texts agree again on a run of ``RESYNC_RUN`` characters.

    The first offset of ``current`` whose next ``RESYNC_RUN`` characters occur in ``previous``
    (``len(current)`` when none does). difflib's ``SequenceMatcher`` answered the same question
    through longest-match search at about 10 ms per request, and a set of ``previous``'s runs at
    about 0.4 ms; here it is substring search (C-level ``in``): the run at offset o contains the
    ``_ANCHOR``-character piece of ``current`` starting at the first multiple of ``_ANCHOR`` at or
    after o, so only the offsets whose piece occurs in ``previous`` are checked run by run.
    """
    last = len(current) - RESYNC_RUN
    for anchor in range(0, last + _ANCHOR, _ANCHOR):
        if current[anchor:anchor + _ANCHOR] not in previous:
            continue  # no run at offsets anchor - _ANCHOR + 1 .. anchor occurs in previous
        for offset in range(max(anchor - _ANCHOR + 1, 0), min(anchor, last) + 1):
            if current[offset:offset + RESYNC_RUN] in previous:
                return offset
    return len(current)


def widen_reference(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` widened to the whole value they sit in: out to the nearest boundary character
    (``_is_boundary``) on each side, or the text's ends."""
    while start > 0 and not _is_boundary(text[start - 1]):
        start -= 1
    while end < len(text) and not _is_boundary(text[end]):
        end += 1
    return start, end


def span_facts_reference(span: str) -> tuple[bool, bool, bool, bool, bool, int]:
    """Character classes of ``span``: ``(has a digit, has a letter, has a space, has a character neither
    alphanumeric nor a space, every character a letter or a space, how many characters are digits)``,
    by ``str``'s own tests (``isdigit``, ``isalpha``, ``isspace``, ``isalnum``)."""
    chars = set(span)  # the class tests look at each distinct character once (spans run to hundreds of characters)
    return (any(c.isdigit() for c in chars), any(c.isalpha() for c in chars), any(c.isspace() for c in chars),
            any(not (c.isalnum() or c.isspace()) for c in chars), all(c.isalpha() or c.isspace() for c in chars),
            sum(c.isdigit() for c in span))


def member_span_reference(text: str, start: int, key: str) -> tuple[int, int] | None:
    """``(start, end)`` of the text of member ``key`` of the JSON object at ``text[start:]`` (after JSON
    whitespace); None when the object lacks the member or has it twice (``parse_object``'s spans). Raises
    ``ValueError`` when no JSON object this walk reads starts there."""
    index = _WS.match(text, start).end()
    walked = _walk(text, index, None) if text[index:index + 1] == "{" else None
    if walked is None:
        raise ValueError("member_span: no JSON object at the given index")
    return walked[1].get(key)


# The same six definitions compiled (pipelines/ingest/_divergence.c), where the install built them: a third
# of the body path's Python time was these loops over characters (bench/README.md, "The divergence compiled").
# The Python above stays the reference (tests/lib/test_divergence_compiled.py) and the fallback.
try:
    from pipelines.ingest import _divergence as compiled
except ImportError:  # built without a C compiler: the same answers, slower
    compiled = None
common_prefix_chars = compiled.common_prefix if compiled else common_prefix_chars_reference
_realign = compiled.realign if compiled else realign_reference
_widen = compiled.widen if compiled else widen_reference
_span_facts = compiled.span_facts if compiled else span_facts_reference
# compiled, it also raises ValueError for a member name written with an escape (the caller walks the line instead)
member_span = compiled.member_span if compiled else member_span_reference

# orjson keeps integers to 64 bits and reads a longer one as a float; json.loads keeps every integer whole. An
# integer that may not fit has at least this many digits (-9223372036854775809 has 19), so a line holding a run of
# them, in a number or in a string alike, is read by json.loads.
LONG_INTEGER_DIGITS = 19


def digit_run_reference(text: str, run: int) -> bool:
    """Whether ``text`` holds ``run`` or more ASCII digits in a row (``_divergence.digit_run`` compiled)."""
    return run <= 0 or re.search("[0-9]{%d}" % run, text) is not None


def loads(line: str):
    """``json.loads(line)``: the same value (types, key order, the last of a repeated key), or its error.

    Read by orjson (its C reader, yyjson: about half json.loads' CPU on a logged 22 KB request, bench/README.md,
    "orjson for the lane's bodies") where it gives json.loads' value; by json.loads where it may not: a run of
    ``LONG_INTEGER_DIGITS`` digits, or what orjson refuses and json reads (NaN, Infinity, 1e400 as inf, a lone
    surrogate escape, nesting past 1,024 levels) or refuses too (then json.loads raises its own ``ValueError`` or
    ``RecursionError``). Without the compiled digit scan (a regex over 22 KB costs more than orjson saves), every
    line is read by json.loads. ``tests/lib/test_fingerprints_loads.py`` holds the two equal.
    """
    if compiled is None or compiled.digit_run(line, LONG_INTEGER_DIGITS):
        return json.loads(line)
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


_SCAN = json.JSONDecoder().scan_once  # the C scanner json.loads uses: (value, end) of the JSON value at an index
_WS = re.compile(r"[ \t\n\r]*")  # JSON whitespace, as json.loads skips it
# a lone surrogate escape: Python's JSON reader takes it, DuckDB's calls the line malformed (only looked
# for where a "\u" escape occurs: a regex over every body cost more than the normaliser saved)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_object(line: str) -> tuple[dict, dict[str, tuple[int, int]]] | None:
    """``json.loads(line)`` of a JSON object, with where each top-level key's value lies in ``line``.

    Returns ``(record, spans)``, ``spans[key] = (start, end)`` of the value's text (a key given twice
    has no span: which copy a reader keeps is its own choice); None when ``line`` is not a JSON object
    this walk reads (json.loads then decides, and raises for malformed text). The values are read by
    json's own C scanner, key by key, as ``json.loads`` reads them: the same record, one parse.
    """
    parsed = _parse(line, None)
    return None if parsed is None else parsed[:2]


def parse_envelope(line: str) -> tuple[dict, dict[str, tuple[int, int]], dict[str, tuple[int, int]]] | None:
    """``parse_object(line)`` plus the spans (in ``line``) of the keys of its ``"request"`` object.

    The request object is walked key by key like the line (same record, still one parse), so what is
    read of the body afterwards (its ``prompt_cache_key``, the text of its tools list) needs no second
    parse. The third item is empty when the request is not an object, or is given twice.
    """
    return _parse(line, "request")


def _parse(line: str, descend: str | None):
    ws = _WS.match
    index = ws(line, 0).end()
    if line[index:index + 1] != "{":
        return None
    try:
        walked = _walk(line, index, descend)
    except (StopIteration, ValueError, RecursionError):
        return None
    if walked is None or ws(line, walked[2]).end() != len(line):
        return None
    return walked[0], walked[1], walked[3]


def _walk(line: str, index: int, descend: str | None):
    """``(object, spans, end, spans of descend's object)`` of the JSON object at ``line[index] == "{"``;
    None when a key is not a string or a separator is missing (json's scanner raises on bad values)."""
    ws = _WS.match
    index = ws(line, index + 1).end()
    record: dict = {}
    spans: dict[str, tuple[int, int]] = {}
    inner: dict[str, tuple[int, int]] = {}
    if line[index:index + 1] == "}":
        return record, spans, index + 1, inner
    while True:
        if line[index:index + 1] != '"':
            return None
        key, index = _SCAN(line, index)
        index = ws(line, index).end()
        if line[index:index + 1] != ":":
            return None
        start = ws(line, index + 1).end()
        nested = _walk(line, start, None) if key == descend and line[start:start + 1] == "{" else None
        if nested is not None:
            value, index = nested[0], nested[2]
        else:
            value, index = _SCAN(line, start)
        if key in record:
            spans.pop(key, None)  # given twice: no span
            if key == descend:
                inner = {}
        else:
            spans[key] = (start, index)
            if nested is not None:
                inner = nested[1]
        record[key] = value
        index = ws(line, index).end()
        if line[index:index + 1] == ",":
            index = ws(line, index + 1).end()
            continue
        if line[index:index + 1] != "}":
            return None
        return record, spans, index + 1, inner


def without_request_body(line: str, record: dict, spans: dict[str, tuple[int, int]],
                         request_spans: dict[str, tuple[int, int]] | None = None) -> str | None:
    """``line`` with its logged request body cut down to what the usage normaliser reads of it.

    The normaliser reads one field of a request (``$.request.prompt_cache_key``, OpenAI's explicit
    prefix key); the rest of a body (often tens of KB of prompt) only costs it parses. The value of
    ``"request"`` becomes ``{}``, or ``{"prompt_cache_key": <its text as written>}``; every other byte
    of the line stays. Returns None (keep the line whole) when the line has no request object of its
    own span, or its text holds what Python's and DuckDB's JSON readers judge differently (a
    surrogate escape, which DuckDB rejects unpaired: a line malformed for the normaliser stays
    malformed; NaN, Infinity and huge numbers both take), or the word ``"error"``, which the
    normaliser's quarantine excerpt looks for anywhere in a line. ``request_spans`` (from
    ``parse_envelope``) spares parsing the request again for its ``prompt_cache_key``.
    """
    span = spans.get("request")
    if span is None or not isinstance(record.get("request"), dict):
        return None
    low, high = span
    if line.find('"error"', low, high) >= 0 or (line.find("\\u", low, high) >= 0 and _SURROGATE_ESCAPE.search(line, low, high)):
        return None
    kept = "{}"
    if "prompt_cache_key" in record["request"]:
        if request_spans:
            key_span = request_spans.get("prompt_cache_key")
            key_text = None if key_span is None else line[key_span[0]:key_span[1]]
        else:
            parsed = parse_object(line[low:high])
            key_span = parsed[1].get("prompt_cache_key") if parsed else None
            key_text = None if key_span is None else line[low + key_span[0]:low + key_span[1]]
        if key_text is None:
            return None
        kept = '{"prompt_cache_key":' + key_text + "}"
    return line[:low] + kept + line[high:]


def _is_boundary(char: str) -> bool:
    return char.isspace() or char in "\"'()[]{}<>,;="


_TIMESTAMP = re.compile(r"^[0-9][0-9:\-T .,/Z+]*$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F_\-]+$")
# a date or a clock time inside other text ("Current time: 2026-11-20T10:02:02Z", "as of 10:02 today")
_TIME_INSIDE = re.compile(r"\d{4}-\d{2}-\d{2}|\b\d{1,2}:\d{2}(:\d{2})?\b")


def describe_span(span: str) -> str:
    """Character classes and length of a span, with a guess at what it is; the span itself is not returned."""
    if not span:
        return "nothing (one text ends where the other goes on)"
    has_digit, has_alpha, has_space, has_other, letters_or_spaces, digits = _span_facts(span)
    looks_like_time = bool(_TIMESTAMP.match(span.replace("T", " ").rstrip("Z"))) and digits >= 4
    classes = []
    if has_digit:
        classes.append("digits")
    if has_alpha and not looks_like_time:  # the T and Z of ISO-8601 are separators
        classes.append("letters")
    if has_space:
        classes.append("spaces")
    if has_other or (looks_like_time and ("T" in span or "Z" in span)):
        classes.append("separators")
    shape = " and ".join([", ".join(classes[:-1]), classes[-1]] if len(classes) > 1 else classes)
    if len(span) > 200:
        guess = "a long changed passage (reordered or rewritten content)"
    elif span.isdigit() and len(span) not in (10, 13):
        guess = "a counter or number"
    elif looks_like_time:
        guess = "a timestamp"
    elif _TIME_INSIDE.search(span):
        guess = "a timestamp inside text"
    elif _UUID.match(span) or (_HEX.match(span) and len(span) >= 12 and any(c.isdigit() for c in span)):
        guess = "a request id or hash"
    elif letters_or_spaces:
        guess = "a name or word"
    else:
        guess = "a changing value"
    return f"{shape}, {len(span)} chars: looks like {guess}"
