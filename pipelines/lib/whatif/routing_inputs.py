"""Requests for the routing what-if, from block-hash traces or from usage rows with prefix families.

* **Block-hash traces** (Mooncake FAST'25 format: ``timestamp`` ms, ``input_length`` tokens,
  ``hash_ids``, one chained hash per ``block_size`` tokens): every block is cacheable, block i holds
  ``min(block_size, input_length - i x block_size)`` tokens, the family is the first two block ids
  (``"h0,h1"``) and its preamble copy is the family's last block (``hash_ids[1]``, or ``[0]``).
  Requests are replayed in ``timestamp`` order (stable: the file's order among equal times).
* **Usage rows** (``core.usage``, any source): the family is ``prefix_family``; the request's one
  cacheable block is the family's preamble, as long as the tokens the log says it read or wrote
  (``sql/whatif/routing__usage_requests.sql``); the rest of the prompt is not cacheable. Rows are
  replayed in ``ts`` order. A usage bucket row counts as one request.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from pathlib import Path

import duckdb
import pyarrow as pa

from pipelines.ingest.discover import discover
from pipelines.lib.sql import statement
from pipelines.lib.whatif.routing import Request

DEFAULT_BLOCK_TOKENS = 512  # tokens per hash_ids block in Mooncake traces (FAST'25 trace README)
TRACE_SUFFIXES = (".jsonl", ".jsonl.gz")
CHUNK_ROWS = 200_000  # usage rows per Arrow batch of a day's replay (a few MB of columns held at once)
# a large day's rows are read (and sorted by DuckDB) one slice of request time after another, each
# slice about this many rows: measured at 5M requests a day, the routing step of a run peaked at 2.17 GB
# of RSS sorting the whole day at once; a 5M-row day alone: 1.04 GB in one query, 0.54 GB in 5 slices
SLICE_ROWS = 1_000_000


@dataclass
class TraceFolder:
    """What ``read_trace_folder`` found: the trace ``requests`` in arrival order, the ``other_files``
    (log files that are not block-hash traces) and ``skipped`` lines (``file:line: reason``)."""

    requests: list[Request] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def trace_request(hash_ids: list[int], input_length: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> Request:
    """One trace record as a ``Request`` (see the module docstring)."""
    tokens = tuple(max(0, min(block_tokens, input_length - i * block_tokens)) for i in range(len(hash_ids)))
    family_ids = hash_ids[:2]
    return Request(family=",".join(str(h) for h in family_ids), blocks=tuple(hash_ids), block_tokens=tokens,
                   prompt_tokens=input_length, family_block=family_ids[-1] if family_ids else None)


def read_trace_folder(root: Path, block_tokens: int | None = None, follow_symlinks: bool = False) -> TraceFolder:
    """Every block-hash trace record in the ``*.jsonl`` / ``*.jsonl.gz`` files under ``root``.

    A file is a trace when its first record carries ``hash_ids``; its block size is
    ``block_tokens`` if given, else its ``source.yaml`` ``block_size_tokens``, else 512. Lines that are
    not JSON objects with a list of integer ``hash_ids`` and a non-negative integer ``input_length``
    are skipped and listed (nothing is written anywhere). Raises ``FileNotFoundError`` for a missing
    folder. Each line is parsed on its own with ``json.loads`` so one bad line skips only itself.
    """
    found = TraceFolder()
    timed: list[tuple[int, int, Request]] = []
    for log in discover(Path(root), follow_symlinks=follow_symlinks):
        if not log.relative.endswith(TRACE_SUFFIXES):
            found.other_files.append(log.relative)
            continue
        size = int(block_tokens or log.defaults.get("block_size_tokens") or DEFAULT_BLOCK_TOKENS)
        opener = gzip.open if log.relative.endswith(".gz") else open
        is_trace, skipped = None, []  # decided by the first record that is a JSON object
        try:
            with opener(log.path, "rt", encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    record, reason = _trace_record(line)
                    if is_trace is None and reason == "no hash_ids":
                        is_trace = False
                        break
                    if record is None:
                        skipped.append(f"{log.relative}:{number}: {reason}")
                        continue
                    is_trace = True
                    timed.append((record[0], len(timed), trace_request(record[1], record[2], size)))
        except (OSError, EOFError) as exc:
            skipped.append(f"{log.relative}: unreadable ({exc})")
            is_trace = is_trace or False
        if is_trace:
            found.skipped += skipped
        else:
            found.other_files.append(log.relative)
    timed.sort(key=lambda t: (t[0], t[1]))
    found.requests = [request for _, _, request in timed]
    return found


def _trace_record(line: str) -> tuple[tuple[int, list[int], int] | None, str]:
    """``((timestamp_ms, hash_ids, input_length), "")`` or ``(None, reason)``."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg})"
    except RecursionError:  # json.loads recurses once per nesting level (a break test: the command stopped on it)
        return None, "JSON nested too deeply"
    if not isinstance(value, dict) or "hash_ids" not in value:
        return None, "no hash_ids"
    hash_ids, length, ts = value.get("hash_ids"), value.get("input_length"), value.get("timestamp", 0)
    if not isinstance(hash_ids, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hash_ids):
        return None, "hash_ids is not a list of integers"
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        return None, "input_length is not a non-negative integer"
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        return None, "timestamp is not a number of milliseconds"
    return (ts, hash_ids, length), ""


def usage_requests(conn: duckdb.DuckDBPyConnection, start: date = date(1, 1, 1),
                   end: date = date(9999, 12, 31)) -> dict[date, list[Request]]:
    """``core.usage`` rows of the UTC days ``[start, end)`` as requests, per day, in arrival order."""
    out: dict[date, list[Request]] = {}
    for day, family, prompt, cacheable in conn.execute(statement("whatif/routing__usage_requests"),
                                                       {"start": start, "end": end, "from": _midnight(start),
                                                        "to": _midnight(end)}).fetchall():
        out.setdefault(day, []).append(_request(family, prompt, cacheable))
    return out


def usage_request_batches(conn: duckdb.DuckDBPyConnection, start: date, end: date, rows: int = 0,
                          chunk_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of ``usage_requests`` for the UTC days ``[start, end)`` (``prefix_family``, ``prompt_tokens``,
    ``cacheable_tokens``), in arrival order, in Arrow batches of at most ``chunk_rows`` (default
    ``CHUNK_ROWS``): a day is replayed without holding its requests at once. ``rows``, the requests the
    range holds (0: not known), cuts it into ``ceil(rows / SLICE_ROWS)`` equal slices of request time read
    one after another, so DuckDB sorts one slice at a time (memory flat in the day's size; a small day is
    one query). ``conn`` runs nothing else until the batches are consumed."""
    first, last = _midnight(start), _midnight(end)
    slices = max(1, -(-rows // SLICE_ROWS))
    bounds = [first + (last - first) * i / slices for i in range(slices)] + [last]
    for sliced_from, sliced_to in zip(bounds, bounds[1:]):
        yield from conn.execute(statement("whatif/routing__usage_requests"),
                                {"start": start, "end": end, "from": sliced_from, "to": sliced_to}
                                ).fetch_record_batch(chunk_rows or CHUNK_ROWS)


def _midnight(day: date) -> datetime:
    """The first instant of the UTC day ``day``."""
    return datetime.combine(day, time(0), tzinfo=timezone.utc)


def family_counts(conn: duckdb.DuckDBPyConnection, start: date, end: date) -> dict[str, int]:
    """Requests per family among the requests of ``usage_requests`` for the UTC days ``[start, end)``."""
    return dict(conn.execute(statement("whatif/routing__family_counts"), {"start": start, "end": end}).fetchall())


def _request(family: str, prompt: int, cacheable: int) -> Request:
    """A usage row as a request: one block, the family's cacheable span (none when nothing was cacheable)."""
    blocks = (family,) if cacheable > 0 else ()
    return Request(family=family, blocks=blocks, block_tokens=(cacheable,) if blocks else (),
                   prompt_tokens=prompt, family_block=family if blocks else None)


def staged_usage_requests(root: Path, follow_symlinks: bool = False,
                          quarantined: list | None = None) -> dict[date, list[Request]]:
    """Stage the usage logs under ``root`` into an in-memory warehouse (nothing is written to disk) and
    return their rows as requests, per UTC day (see ``usage_requests``). Raises ``FileNotFoundError``
    for a missing folder; bad records are left out as staging quarantines them, and ``quarantined`` (a
    list, when given) receives ``(source_file, source_line, reason)`` of each, in file and line order."""
    from pipelines.ingest import stage as ingest
    from pipelines.lib import warehouse

    with duckdb.connect(":memory:") as conn:
        warehouse.prepare(conn)
        ingest.stage_logs(conn, Path(root), follow_symlinks=follow_symlinks)
        if quarantined is not None:
            quarantined.extend(conn.execute("select source_file, source_line, reason from core.quarantine "
                                            "order by source_file, source_line").fetchall())
        return usage_requests(conn)
