"""Find usage-log files under a folder, read their folder defaults, and stream their records.

Files, found recursively: ``*.jsonl``, ``*.jsonl.gz`` (one JSON record per line), ``*.json`` (an
array of records, or one object), ``*.sse`` (server-sent-event transcripts of streamed responses,
one record per transcript), ``*.csv`` and ``*.parquet`` (one record per row, columns as keys). A folder may hold ``source.yaml`` with defaults for the files
beneath it (nearest folder wins, key by key)::

    provider: self_hosted          # openai, azure, anthropic, gemini, bedrock, deepseek, self_hosted
    model: kimi-k2                 # used when a record names no model (Bedrock bodies, traces)
    tenant: acme
    app: chat
    trace_start: 2026-11-27T00:00:00Z   # ISO-8601 UTC; block-hash traces carry ms offsets from it
    block_size_tokens: 512              # tokens per trace block (Mooncake: 512)
    cache: infinite                     # cache model for trace replay: infinite, ttl or lru
    cache_ttl_seconds: 300              # ttl: blocks expire this long after their last use
    cache_capacity_tokens: 3000000      # lru: KV-cache size in tokens
    ts: 2026-11-27T10:00:00Z            # time of records that carry none (e.g. captured stream transcripts)
    deployments:                        # Azure deployment name -> model it serves (for pricing)
      prod-chat: gpt-4o-2024-11-20

Records are yielded in chunks as PyArrow tables ``(source_line int64, line string)`` so memory
stays flat on large files. Reading is done here rather than by DuckDB's JSON reader because each
malformed line must be kept (and counted) with its own position, which ``read_json`` with
``ignore_errors`` silently drops. Blank lines are skipped (they are not records); a UTF-8
byte-order mark and CRLF endings are removed.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import yaml

LOG_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".sse", ".csv", ".parquet")
SOURCE_KEYS = {"provider", "model", "tenant", "app", "trace_start", "block_size_tokens", "cache",
               "cache_ttl_seconds", "cache_capacity_tokens", "ts", "deployments"}
CHUNK_BYTES = 32 * 1024 * 1024  # records per DuckDB batch, by size
READ_BYTES = 64 * 1024


class SourceConfigError(ValueError):
    """A ``source.yaml`` that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class LogFile:
    """One log file: absolute ``path``, ``relative`` name under the logs root, merged folder defaults."""

    path: Path
    relative: str
    defaults: dict = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        return self.path.stat().st_size

    @property
    def mtime_ns(self) -> int:
        return self.path.stat().st_mtime_ns

    @property
    def defaults_sha(self) -> str:
        """Hash of the folder defaults that apply, so an edited ``source.yaml`` re-stages the file."""
        return hashlib.sha256(json.dumps(self.defaults, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class Unreadable:
    """A record the reader could not turn into text: its line, a reason and a privacy-safe excerpt."""

    source_line: int
    reason: str
    raw_excerpt: str


def load_source_yaml(path: Path) -> dict:
    """Parse one ``source.yaml``; raises ``SourceConfigError`` for bad YAML, unknown keys or bad values."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SourceConfigError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise SourceConfigError(f"{path}: expected a mapping of defaults, got {type(data).__name__}")
    unknown = set(data) - SOURCE_KEYS
    if unknown:
        raise SourceConfigError(f"{path}: unknown keys {sorted(unknown)}; allowed: {sorted(SOURCE_KEYS)}")
    for key in ("trace_start", "ts"):
        if key in data:
            data[key] = _iso_utc(data[key], path, key)
    deployments = data.get("deployments", {})
    if not isinstance(deployments, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in deployments.items()):
        raise SourceConfigError(f"{path}: deployments must map deployment names to model ids (text: text)")
    block = data.get("block_size_tokens", 1)
    if isinstance(block, bool) or not isinstance(block, int) or block <= 0:
        raise SourceConfigError(f"{path}: block_size_tokens must be a positive integer")
    model = data.get("cache", "infinite")
    if model not in ("infinite", "ttl", "lru"):
        raise SourceConfigError(f"{path}: cache model {model!r} is unknown; use infinite, ttl or lru")
    if model == "ttl" and not (isinstance(data.get("cache_ttl_seconds"), (int, float)) and data["cache_ttl_seconds"] > 0):
        raise SourceConfigError(f"{path}: cache: ttl needs a positive cache_ttl_seconds")
    if model == "lru" and not (isinstance(data.get("cache_capacity_tokens"), int) and data["cache_capacity_tokens"] > 0):
        raise SourceConfigError(f"{path}: cache: lru needs a positive integer cache_capacity_tokens")
    return {k: str(v) if k in {"provider", "model", "tenant", "app"} else v for k, v in data.items()}


def _iso_utc(value, path: Path, key: str) -> str:
    from datetime import datetime, timezone

    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError as exc:
            raise SourceConfigError(f"{path}: {key} {value!r} is not ISO-8601") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).isoformat()


def discover(root: Path, follow_symlinks: bool = False) -> list[LogFile]:
    """Every log file under ``root`` (sorted by relative path) with its merged ``source.yaml`` defaults.

    Raises ``FileNotFoundError`` when ``root`` does not exist and ``SourceConfigError`` for a bad
    ``source.yaml``. Symlinks that resolve outside ``root`` are skipped unless ``follow_symlinks``.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"logs folder {root} does not exist or is not a folder")
    root_resolved = root.resolve()
    defaults_cache: dict[Path, dict] = {}

    def defaults_for(folder: Path) -> dict:
        if folder in defaults_cache:
            return defaults_cache[folder]
        parent = {} if folder == root else defaults_for(folder.parent)
        own = load_source_yaml(folder / "source.yaml") if (folder / "source.yaml").is_file() else {}
        defaults_cache[folder] = {**parent, **own}
        return defaults_cache[folder]

    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or not path.name.lower().endswith(LOG_SUFFIXES):
            continue
        if not follow_symlinks and not path.resolve().is_relative_to(root_resolved):
            continue
        found.append(LogFile(path=path, relative=path.relative_to(root).as_posix(), defaults=defaults_for(path.parent)))
    return found


def read_records(log: LogFile, unreadable: list[Unreadable], chunk_bytes: int = CHUNK_BYTES) -> Iterator[pa.Table]:
    """Yield ``(source_line, line)`` chunks of ``log``; lines that cannot be decoded go to ``unreadable``.

    A gzip stream cut short ends the file with one ``Unreadable`` entry for the lost tail.
    """
    name = log.path.name.lower()
    if name.endswith(".json"):
        yield from _read_json_array(log, unreadable)
        return
    if name.endswith(".sse"):
        yield from _read_sse(log)
        return
    if name.endswith((".csv", ".parquet")):
        yield from _read_table(log, unreadable)
        return
    blocks = _gunzip(log.path) if name.endswith(".gz") else _plain(log.path)
    line_no = 0
    carry = b""
    numbers: list[int] = []
    texts: list[str] = []
    pending = 0
    while True:
        try:
            block = next(blocks, b"")
        except StreamError as exc:
            # every complete line before the damage is kept; the damaged tail is one quarantined record
            unreadable.append(Unreadable(line_no + 1, f"{exc} after line {line_no}; the rest of the file is unreadable",
                                         _excerpt_of_bytes(carry, str(exc))))
            carry, block = b"", b""
        if line_no == 0 and not numbers and block.startswith(b"\xef\xbb\xbf"):
            block = block[3:]
        if not block:
            if carry.strip():
                more_numbers, more_texts = _decode([carry], line_no + 1, unreadable)
                numbers += more_numbers
                texts += more_texts
            if numbers:
                yield _to_table(numbers, texts)
            return
        pieces = (carry + block).split(b"\n")
        carry = pieces.pop()
        more_numbers, more_texts = _decode(pieces, line_no + 1, unreadable)
        line_no += len(pieces)
        numbers += more_numbers
        texts += more_texts
        pending += len(block)
        if pending >= chunk_bytes:
            yield _to_table(numbers, texts)
            numbers, texts, pending = [], [], 0


class StreamError(Exception):
    """A compressed stream that is cut short or corrupt (the message says which)."""


def _plain(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while block := handle.read(READ_BYTES):
            yield block


def _gunzip(path: Path) -> Iterator[bytes]:
    """Decompressed bytes of a (multi-member) gzip file, yielding all that decodes before any damage.

    Hand-rolled over ``zlib`` rather than ``gzip.open`` because the latter discards the output of a
    read that hits a cut-off or corrupt stream, which would lose valid records silently.
    """
    decoder = zlib.decompressobj(wbits=31)
    fresh = True  # no bytes of the current member consumed yet
    with open(path, "rb") as handle:
        while raw := handle.read(READ_BYTES):
            while raw:
                if decoder.eof:
                    if not raw.startswith(b"\x1f\x8b"):
                        raise StreamError("bytes after the end of the gzip stream")
                    decoder, fresh = zlib.decompressobj(wbits=31), True
                try:
                    out = decoder.decompress(raw)
                except zlib.error as exc:
                    raise StreamError(f"corrupt gzip stream ({exc})") from exc
                fresh = False
                if out:
                    yield out
                raw = decoder.unused_data if decoder.eof else b""
    if not decoder.eof and not fresh:
        if tail := decoder.flush():
            yield tail
        raise StreamError("gzip stream is cut short (file truncated)")


def _decode(pieces: list[bytes], first_line: int, unreadable: list[Unreadable]) -> tuple[list[int], list[str]]:
    numbers, texts = [], []
    for offset, raw in enumerate(pieces):
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            continue
        try:
            texts.append(raw.decode("utf-8"))
            numbers.append(first_line + offset)
        except UnicodeDecodeError as exc:
            unreadable.append(Unreadable(first_line + offset, f"not UTF-8 text (invalid byte at offset {exc.start})",
                                         _excerpt_of_bytes(raw, f"invalid UTF-8 at byte {exc.start}")))
    return numbers, texts


def _to_table(numbers: list[int], texts: list[str]) -> pa.Table:
    return pa.table({"source_line": pa.array(numbers, pa.int64()), "line": pa.array(texts, pa.string())})


def _read_json_array(log: LogFile, unreadable: list[Unreadable]) -> Iterator[pa.Table]:
    raw = log.path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        return
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        unreadable.append(Unreadable(0, f"malformed JSON file: {exc}", _excerpt_of_bytes(raw, str(exc))))
        return
    except RecursionError:
        unreadable.append(Unreadable(0, "malformed JSON file: nesting too deep", _excerpt_of_bytes(raw, "nesting too deep")))
        return
    records = data if isinstance(data, list) else [data]
    yield _to_table(list(range(1, len(records) + 1)), [json.dumps(r) for r in records])


def _excerpt_of_bytes(raw: bytes, where: str) -> str:
    """Privacy-safe stand-in for text that could not be parsed: length, hash and the failure point."""
    return json.dumps({"length_bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()[:16], "failed_at": where})


def malformed_json_excerpt(line: str) -> tuple[str, str]:
    """Reason and excerpt for a line DuckDB found not to be JSON: where Python's parser fails, no text."""
    try:
        json.loads(line)
        where = "rejected by DuckDB's JSON parser"
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})"
    except RecursionError:
        where = "nesting too deep"
    return f"malformed JSON: {where}", _excerpt_of_bytes(line.encode("utf-8", "replace"), where)


def _read_sse(log: LogFile) -> Iterator[pa.Table]:
    """One record ``{"response_sse": text}`` per transcript, numbered by its first line.

    A transcript ends after ``data: [DONE]`` (OpenAI) or the ``message_stop`` event (Anthropic), or
    at the end of the file; ``containers.fold_stream`` turns it into the final body.
    """
    numbers, texts, current, first = [], [], [], 0
    text = log.path.read_bytes().decode("utf-8", "replace").removeprefix("\ufeff").replace("\r\n", "\n")
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not current and not line.strip():
            continue
        if not current:
            first = line_no
        current.append(line)
        if line.strip() in ("data: [DONE]", "data:[DONE]") or ('"message_stop"' in line and line.startswith("data:")):
            numbers.append(first)
            texts.append(json.dumps({"response_sse": "\n".join(current) + "\n"}))
            current = []
    if any(line.strip() for line in current):
        numbers.append(first)
        texts.append(json.dumps({"response_sse": "\n".join(current) + "\n"}))
    if numbers:
        yield _to_table(numbers, texts)


def _read_table(log: LogFile, unreadable: list[Unreadable]) -> Iterator[pa.Table]:
    """One JSON record per CSV or Parquet row (column names as keys), read with PyArrow.

    CSV rows are numbered by their line (the header is line 1); a row with the wrong number of
    cells is quarantined with its line. Parquet rows are numbered from 1.
    """
    import polars as pl
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    def to_records(batch: pa.RecordBatch | pa.Table, first: int, skipped: list[int]) -> pa.Table:
        encoded = pl.from_arrow(batch).select(pl.struct(pl.all()).struct.json_encode()).to_series().to_list()
        numbers, n = [], first
        for _ in encoded:
            while n in skipped:
                n += 1
            numbers.append(n)
            n += 1
        return _to_table(numbers, encoded)

    if log.path.name.lower().endswith(".parquet"):
        try:
            handle = pq.ParquetFile(log.path)
        except (pa.ArrowException, OSError) as exc:
            unreadable.append(Unreadable(0, f"unreadable Parquet file: {exc}", _excerpt_of_bytes(b"", str(exc)[:200])))
            return
        first = 1
        for batch in handle.iter_batches(batch_size=100_000):
            yield to_records(batch, first, [])
            first += batch.num_rows
        return
    bad_lines: list[int] = []

    def on_invalid(row) -> str:
        line = (row.number or 0) + 1 if row.number is not None else 0
        bad_lines.append(line)
        unreadable.append(Unreadable(line, f"CSV row has {row.actual_columns} cells, the header has {row.expected_columns}",
                                     _excerpt_of_bytes((row.text or "").encode(), "cell count")))
        return "skip"

    try:
        table = pacsv.read_csv(log.path, parse_options=pacsv.ParseOptions(invalid_row_handler=on_invalid, newlines_in_values=True),
                               convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    except (pa.ArrowException, OSError) as exc:
        unreadable.append(Unreadable(0, f"unreadable CSV file: {exc}", _excerpt_of_bytes(b"", str(exc)[:200])))
        return
    if table.num_rows:
        yield to_records(table, 2, bad_lines)
