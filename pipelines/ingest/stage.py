"""Stage usage-log files into the warehouse: records -> normalised rows or quarantine, per file.

``stage_logs(conn, root)`` discovers the files under ``root`` (see ``logfiles``), matches them to the
manifest ``stage.files`` by what they are (``generations``: unchanged, grown, renamed, rotated, a new
generation), and stages the new and changed ones, many small files at a time, each batch in one
transaction: the files' previous rows are replaced (a file grown by whole lines keeps them and has only its new
lines read: ``appends``), accepted records go to ``core.usage`` (with the
catalogue id of their model) and rejected ones to ``core.quarantine`` with a reason; duplicate request
ids are then settled by a rule that does not depend on arrival order. For every file rows_in =
accepted + quarantined. The day's rows are stored once: the daily assets read ``core.usage`` itself.

The normalisation itself is set-based DuckDB SQL generated from the format declaration
(``pipelines/ingest/formats.yaml``, see ``pipelines/ingest/format_sql.py``): ``sql/ingest/shaped_items__create.sql``,
``sql/ingest/fields/<format>.sql``, ``validated_items__create.sql``, ``file_rows__insert_normalised.sql``.
Python only splits files into records, fingerprints logged request bodies, describes unparseable lines,
and replays block-hash traces. A plain JSONL file first takes the fast lane
(``sql/ingest/fast_items__read_jsonl.sql``): DuckDB's parallel JSON reader accepts its common records
outright (a logged request body's line too, read again only for its fingerprint) and only the rest are read
line by line.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import tempfile
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timedelta, timezone
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.ingest import appends, body_chunks, cache_models, containers, fingerprints, formats, generations, objectstore
from pipelines.lib import faults, prices, progress, warehouse
from pipelines.ingest.discover import LogFile, duckdb_literal_path, stored_mtime_ns
from pipelines.ingest.readers import (CHUNK_BYTES, HEAD_BYTES, NEWLINE, Unreadable, malformed_json_excerpt,
                                      read_head, read_line_ranges, read_records, read_tail, wide_encoding)
from pipelines.lib.sql import params_for, statement
from pipelines.lib.warehouse import transaction

DEFAULT_BLOCK_SIZE = 512  # tokens per block in Mooncake traces (FAST'25 trace README)
# the general normaliser's stages (generated from pipelines/ingest/formats.yaml by pipelines/ingest/format_sql.py):
# what each record is, its fields (one statement per format present), who it is and why it is rejected,
# then its counts, time and checks into file_rows
SHAPE = "ingest/shaped_items__create"
FIELDED = "ingest/fielded_items__create"
VALIDATE = "ingest/validated_items__create"
UNMAPPED = "ingest/unmapped_usage__create"
NORMALISE = "ingest/file_rows__insert_normalised"
COUNT_BESIDE_BYTES = 64 * 1024 * 1024  # a plain file this large is counted while the fast lane reads it (_fast_lane)
PRINTS_ROWS = 65_536  # fingerprint rows (about 300 bytes each) gathered before one insert
CHUNKS_IN_FLIGHT = 1  # chunks whose bodies the workers measure while the next is read (each holds its lines: 32 MB)
PRINTS_SCHEMA = pa.schema([  # a chunk's fingerprint rows (file_fingerprints__create.sql), typed whatever values it holds
    ("source_line", pa.int64()), ("family", pa.string()), ("system_sha", pa.string()), ("tools_sha", pa.string()),
    ("opening_hashes", pa.list_(pa.string())), ("rendered_chars", pa.int64()), ("divergence_offset_chars", pa.int64()),
    ("divergence_span", pa.string())])


@dataclass(frozen=True)
class FileResult:
    """Row accounting of one file: ``rows_in = rows_accepted + rows_quarantined`` (records)."""

    source_file: str
    rows_in: int
    rows_accepted: int
    rows_quarantined: int
    skipped: bool = False  # unchanged since the last run, not read again
    error: str | None = None  # why the file could not be read (its earlier rows, if any, are kept)
    note: str | None = None  # what the user should know though nothing was lost (the fast reader failed on it)
    appended: bool = False  # only the lines appended since it was staged were read (appends.py); counts: the file's


KEPT_UNREAD_NOTE = "not read this run ({error}); the {rows:,} rows staged from it before are kept, and it is read again once that is fixed"
SMALL_FILE_BYTES = 1 << 20  # files up to this size are staged many at a time
BATCH_BYTES = 32 * 1024 * 1024  # bytes of small files normalised in one pass
BATCH_FILES = 20_000  # small files published in one transaction at most
BATCH_MARKER = "\x1f"  # stands for the file name in ids the normaliser scopes to a file (macro request_id_staged)


def stage_logs(conn: duckdb.DuckDBPyConnection, root: Path | str, follow_symlinks: bool = False,
               on_file: Callable[[LogFile, int, int], None] | None = None,
               earliest: date = date(2000, 1, 1), latest: datetime | None = None,
               fast_lane: bool = True) -> list[FileResult]:
    """Stage every new or changed log file under ``root``; returns one ``FileResult`` per file found.

    Files are told apart by what they are (``generations``): a file whose device, inode, size, mtime
    and ``source.yaml`` defaults match the manifest is skipped; one that grew is staged again (its
    rows replaced), or, a JSON-lines file grown by whole lines, only its new lines (``appends``); one that shrank or was replaced is a new generation whose predecessor's rows stay
    under ``<name>#<n>``, unless that content is still in the folder under another name, which then
    takes them over (rename, rotation: nothing is counted twice). A file that disappears keeps its
    rows (the warehouse keeps history the logs no longer hold). Each symlinked or hard-linked file is
    staged once. A file or folder that cannot be read is quarantined as one record with the reason
    (``FileResult.error``; a file staged before keeps its rows) and tried again next run.

    Small files are staged many at a time: one DuckDB read and one transaction for up to
    ``BATCH_FILES`` files of ``SMALL_FILE_BYTES`` or less with the same defaults; every file and
    batch is written in one transaction. Duplicate request ids keep the copy in the file whose name
    sorts first, then the earliest line (the order files arrive in does not matter).

    Records timed before ``earliest`` (the first partition day) or after ``latest`` (default: one
    day from now, UTC) are quarantined with that reason rather than building far-off partitions.
    ``on_file(log, index, total)`` is called before each file or batch (for progress display).
    ``fast_lane`` False sends every record through the general normaliser (tests compare the two).
    ``root`` may be a bucket prefix (``s3://bucket/prefix``, ``gs://``, ``az://``: ``objectstore``),
    read the same way. Raises ``FileNotFoundError`` for a missing ``root``, ``objectstore.ObjectStoreError``
    for a prefix that cannot be listed; a bad ``source.yaml`` quarantines the files of its folder (one record
    each, with the reason) and problems inside a file never raise, they become quarantine rows.
    """
    entries = {row[0]: generations.Entry(*row) for row in conn.execute(
        f"select {generations.MANIFEST_COLUMNS} from stage.files").fetchall()}
    try:
        with objectstore.found_logs(root, follow_symlinks, entries) as logs:  # a bucket's objects: downloaded while staging
            return _stage_found(conn, logs, entries, on_file, earliest, latest, fast_lane)
    finally:
        body_chunks.shutdown()  # the fingerprint workers' memory is not held through the rest of the run


def _stage_found(conn: duckdb.DuckDBPyConnection, logs: list[LogFile], entries: dict[str, generations.Entry],
                 on_file: Callable[[LogFile, int, int], None] | None, earliest: date, latest: datetime | None,
                 fast_lane: bool) -> list[FileResult]:
    """``stage_logs`` for the files found: match them to the manifest ``entries`` and stage the new and changed."""
    plan = generations.plan(logs, entries)
    results: dict[str, FileResult] = {}
    for log, entry in plan.skip:
        results[log.relative] = FileResult(log.relative, entry.rows_in, entry.rows_accepted, entry.rows_quarantined, skipped=True)
    for log, entry in plan.kept_unreadable:  # said, not skipped silently: lines added to it meanwhile are not read
        results[log.relative] = FileResult(log.relative, entry.rows_in, entry.rows_accepted, entry.rows_quarantined,
                                           skipped=True, error=log.error, note=KEPT_UNREAD_NOTE.format(
                                               error=log.error, rows=entry.rows_in))
    _refresh_identities(conn, plan.refresh_identity)
    if plan.drop:
        _publish(conn, [], [], {"drop": plan.drop})
    done = 0
    whole: list[LogFile] = []
    for log in plan.stage:  # a file lines were appended to: its new lines only, where they stand alone
        starting = (lambda log=log: on_file(log, done, len(plan.stage))) if on_file else None
        if appended := _stage_appended(conn, log, entries.get(log.relative), plan, earliest, latest, fast_lane, starting):
            results[log.relative] = appended
            done += 1
            faults.maybe_die("stage:after_file")
        else:
            whole.append(log)
    for batch in _batches(whole):
        if on_file:
            on_file(batch[0], done, len(plan.stage))
        for result in _stage_batch(conn, batch, plan, earliest, latest, fast_lane):
            results[result.source_file] = result
        done += len(batch)
        faults.maybe_die("stage:after_file")
    # counts as they stand now: the duplicate rule may have moved a skipped file's records
    counts = {row[0]: row[1:] for row in conn.execute(
        "select source_file, rows_in, rows_accepted, rows_quarantined from stage.files").fetchall()}
    return [FileResult(name, *counts[name], skipped=results[name].skipped, error=results[name].error,
                       note=results[name].note, appended=results[name].appended) if name in counts else results[name]
            for name in sorted(results)]


class _NotAppendable(Exception):
    """An appended part holds lines that may depend on the lines before them (``appends``): stage the whole file."""


def _stage_appended(conn: duckdb.DuckDBPyConnection, log: LogFile, entry: generations.Entry | None,
                    plan: generations.Plan, earliest: date, latest: datetime | None, fast_lane: bool,
                    starting: Callable[[], None] | None = None) -> FileResult | None:
    """Stage only the lines appended to ``log`` since ``entry`` staged it, beside its staged rows (``appends``);
    None when the file is to be staged whole (not such a file, or its new lines may depend on earlier ones)."""
    if (not appends.may_append(log, entry) or log.relative in plan.retire or log.relative in plan.takes_over
            or not plan.heads.get(log.relative)):
        return None  # (before a temporary folder or a query: most files staged are new or small)
    try:
        scratch = tempfile.TemporaryDirectory(prefix="cachemeter-append-")
    except OSError:  # no temporary folder: the whole staging says why (it needs one too)
        return None
    last_line = conn.execute(  # the file's last line with a row: past the staged size when read as it was written
        "select max(n) from (select max(source_line) as n from core.usage where source_file = $name union all "
        "select max(source_line) from core.quarantine where source_file = $name union all "
        "select max(source_line) from stage.duplicate_rows where source_file = $name)", {"name": log.relative}).fetchall()
    with scratch as folder:
        append = appends.appended_part(log, entry, Path(folder), last_line[0][0] or 0)
        if append is None:
            return None
        if starting:
            starting()
        try:
            return replace(_stage_batch(conn, [append.part], plan, earliest, latest, fast_lane, append=append)[0],
                           appended=True)
        except _NotAppendable:
            return None


def stage_file(conn: duckdb.DuckDBPyConnection, log: LogFile, earliest: date = date(2000, 1, 1),
               latest: datetime | None = None, fast_lane: bool = True) -> FileResult:
    """Read, normalise and publish one file in a single transaction (as a new file); returns its accounting."""
    return _stage_batch(conn, [log], generations.Plan(), earliest, latest, fast_lane)[0]


def _batches(logs: list[LogFile]) -> Iterator[list[LogFile]]:
    """Consecutive small files with the same defaults, up to ``BATCH_BYTES`` / ``BATCH_FILES``; a large file alone."""
    batch: list[LogFile] = []
    size = 0
    for log in logs:
        if log.size_bytes > SMALL_FILE_BYTES and not log.error:
            yield [log]
            continue
        if batch and (log.defaults != batch[0].defaults or size + log.size_bytes > BATCH_BYTES or len(batch) >= BATCH_FILES):
            yield batch
            batch, size = [], 0
        batch.append(log)
        size += log.size_bytes
    if batch:
        yield batch


def _refresh_identities(conn: duckdb.DuckDBPyConnection, found: list[tuple[LogFile, int, str]]) -> None:
    """Record device, inode and head of unchanged files staged before those were recorded."""
    if not found:
        return
    conn.register("identity_in", pa.table({
        "source_file": [log.relative for log, _, _ in found],
        "device": pa.array([log.device for log, _, _ in found], pa.int64()),
        "inode": pa.array([log.inode for log, _, _ in found], pa.int64()),
        "head_bytes": pa.array([n for _, n, _ in found], pa.int64()),
        "head_sha": [sha for _, _, sha in found]}))
    try:
        conn.execute(statement("ingest/files__record_identity"))
    finally:
        conn.unregister("identity_in")


@dataclass(frozen=True)
class _LaneRead:
    """The bytes the fast lane read of a file whose lines are then read again from the file itself (not from a copy
    of ours): the file's ``device`` and ``inode`` (None: unknown), ``size`` (bytes read), and the first and last
    ``HEAD_BYTES`` of those bytes (``_changed_since``)."""

    device: int | None
    inode: int | None
    size: int
    head: bytes
    tail: bytes
    whole: bool = False  # read again whole (``_read_file``, a small file of a batch): then any growth is a change


class _FileChanged(Exception):
    """A file of the batch changed between the fast lane's read and the read of its lines again (``_changed_since``);
    ``args[0]``: its relative name, ``args[1]``: how."""


REREADS = 2  # times a batch is read again when a file changes while it is read (a log rotated twice in one run)
GONE_NOTE = "renamed or deleted while it was read: {kept}; a renamed file is staged under its new name by the next run"
# the note names what happened only: "grew: rotated, truncated or rewritten" listed three things that had not, for a
# file lines were appended to (a break test)
CHANGED_NOTE = "changed while it was read ({how}); read again as it is now, by the general reader, which reads each line once"
HOW_CHANGED = {"grew": "lines were appended", "truncated": "truncated", "rewritten": "rewritten or rotated",
               "replaced by another file": "replaced by another file: rotated"}


def _changed_since(path: Path, read: _LaneRead) -> str | None:
    """How the file at ``path`` differs from the bytes the lane read (``read``), or None when those bytes are still
    its first ``read.size`` bytes as far as a cheap test tells: the same device and inode, at least that size, the
    same first and last ``HEAD_BYTES`` of them, and, when the file has grown, a newline as their last byte (else
    the last line read was still being written). Appending whole lines is no change: the lane's lines are still
    where it read them. The lines of a file that changed in any other way would be read again from other bytes than
    the lane read (a break test of a deleted, truncated, copytruncate-rotated or still-written file: rows counted twice,
    fingerprints of other records, a run that stopped on a vanished file)."""
    try:
        with open(path, "rb", buffering=0) as handle:
            status = os.fstat(handle.fileno())
            if read.inode is not None and not _same_identity(status, read.device, read.inode):
                return "replaced by another file"
            if status.st_size < read.size:
                return "truncated"
            if read.whole and status.st_size > read.size:  # its new lines would be read as the next file's
                return "grew"
            head = os.pread(handle.fileno(), len(read.head), 0)
            tail = os.pread(handle.fileno(), len(read.tail), read.size - len(read.tail))
    except OSError as exc:
        return f"no longer readable: {exc.strerror or exc}"
    if head != read.head or tail != read.tail:
        return "rewritten"
    if status.st_size > read.size and not read.tail.endswith(b"\n"):
        return "its last line was still being written"
    return None


def _lane_read_of(log: LogFile, raw: bytes) -> _LaneRead | None:
    """The ``_LaneRead`` of a file the lane read whole into ``raw`` (its bytes as stored, compressed or not); None for
    a file that is not the one found (``_found_here``)."""
    if not _found_here(log):
        return None
    return _LaneRead(log.device, log.inode, len(raw), raw[:HEAD_BYTES], raw[-HEAD_BYTES:] if raw else b"", True)


def _found_here(log: LogFile) -> bool:
    """Whether ``log.path`` is the file that was found, by device and inode: not so for an object store's object,
    whose local copy is this run's own (and cannot change), nor for a file replaced since it was found."""
    try:
        status = os.stat(log.path)
    except OSError:
        return False
    return _same_identity(status, log.device, log.inode)


def _replaced_since_found(segment: _Segment, head: bytes | None) -> str | None:
    """How the file named ``segment.log.path`` is no longer the file found (another file under its name, shorter than
    when found, its first bytes rewritten, gone), or None. Asked after the batch's reads, its head and tail among
    them: these are read by name, and a log rotated meanwhile (``mv a a.1`` then a new ``a``, or copytruncate) gave
    the old file's identity and rows the new file's head and tail, so the next run took the rotated file for another
    and quarantined its rows as duplicates of themselves (a break test). Then the batch is read again as it is now
    (``_stage_changed_batch``). A file the lane read is compared with the bytes it read (``_changed_since``); a file
    the general reader read with ``head``, its first bytes as pinned before its records were read
    (``_pin_heads``): copytruncate and new lines past the old size within the read keep the identity and the size
    (an earlier check's gap), not those bytes (a plain file's: a gzip file is not rewritten in place, and its head
    costs a decompression). An object's copy cannot change."""
    log = segment.log
    if log.error or not log.local:
        return None
    if segment.lane_read is not None:  # lines appended since are no change: these rows are not read again
        return _changed_since(log.path, replace(segment.lane_read, whole=False))
    try:
        status = os.stat(log.path)
        now = read_head(log.path, len(head)) if head and not log.is_gzip else b""
    except OSError as exc:
        return f"no longer readable: {exc.strerror or exc}"
    if not _same_identity(status, log.device, log.inode):
        return "replaced by another file"
    if status.st_size < log.size_bytes:
        return "truncated"
    if head and not log.is_gzip and now != head:
        return "rewritten from its first bytes (copytruncate)"
    return None


def _pin_heads(segments: list[_Segment], heads: dict[str, bytes | None]) -> None:
    """Read the first bytes of each local file the general reader is to read, before it reads them (kept in
    ``heads``: recorded as the file's head, and compared after the read by ``_replaced_since_found``)."""
    for segment in segments:
        if not segment.in_lane and segment.log.local and not segment.log.error and not segment.log.is_gzip:
            _head(segment.log, heads)


def _same_identity(status: os.stat_result, device: int | None, inode: int | None) -> bool:
    """Whether ``status`` is of the file with this device and inode (a file's identity across renames)."""
    return (status.st_dev, status.st_ino) == (device, inode)


@dataclass
class _Segment:
    """One file of a batch: its records are numbered ``base + line`` (``base <= number < base + span``)."""

    log: LogFile
    base: int = 0
    span: int = 0
    in_lane: bool = False
    error: str | None = None  # why the file could not be read (quarantined as one record at line 0)
    note: str | None = None  # the fast reader failed on the file (FileResult.note)
    line_starts: list[tuple[int, int]] | None = None  # (byte offset, line number) where a block's lines start (the lane's count)
    text_path: Path | None = None  # where those offsets are: the file, or a gzip file's text decompressed once (_fast_lane)
    lane_read: _LaneRead | None = None  # what the lane read, when its lines are read again from the file (_changed_since)


def _stage_batch(conn: duckdb.DuckDBPyConnection, logs: list[LogFile], plan: generations.Plan, earliest: date,
                 latest: datetime | None, fast_lane: bool, rereads: int = REREADS,
                 append: appends.Append | None = None) -> list[FileResult]:
    """Read and normalise ``logs`` (same defaults) in one pass and publish them in one transaction. A file that
    changes while it is read has the batch read again as it is now (``_stage_changed_batch``), at most ``rereads``
    times; the last read is published as read. ``append``: the batch is that file's appended lines (``appends``),
    published beside its staged rows; raises ``_NotAppendable`` when they are to be staged with the whole file."""
    defaults = logs[0].defaults
    params = {
        "source_file": BATCH_MARKER,
        "provider": defaults.get("provider"),
        "model": defaults.get("model"),
        "tenant": defaults.get("tenant"),
        "app": defaults.get("app"),
        "trace_start": defaults.get("trace_start"),
        "default_ts": defaults.get("ts"),
        "deployment_names": list((defaults.get("deployments") or {}).keys()),
        "deployment_models": list((defaults.get("deployments") or {}).values()),
        "block_size": int(defaults.get("block_size_tokens", DEFAULT_BLOCK_SIZE)),
        "earliest": earliest.isoformat(),
        "latest": (latest or datetime.now(timezone.utc) + timedelta(days=1)).isoformat(),
    }
    conn.execute(statement("ingest/file_rows__create"))
    conn.execute(statement("ingest/fast_items__create"))
    conn.execute(statement("ingest/file_fingerprints__create"))
    segments = [_Segment(log, error=log.error) for log in logs]
    try:
        with tempfile.TemporaryDirectory(prefix="cachemeter-stage-") as scratch:  # a gzip file's text, read by the lane
            progress.doing("normalising records")
            lane_offset, again = _batch_lane(conn, segments, params, plan.heads, Path(scratch)) if fast_lane else (0, None)
            return _stage_segments(conn, logs, segments, plan, params, defaults, lane_offset, again, rereads > 0, append)
    except _FileChanged as changed:  # nothing of the batch is published yet: read it again, each line once
        if append is not None:  # (our own copy cannot change; the whole file is staged as it is now)
            raise _NotAppendable from changed
        return _stage_changed_batch(conn, logs, plan, earliest, latest, *changed.args, rereads=rereads - 1)


def _stage_changed_batch(conn: duckdb.DuckDBPyConnection, logs: list[LogFile], plan: generations.Plan, earliest: date,
                         latest: datetime | None, name: str, how: str, rereads: int) -> list[FileResult]:
    """``_stage_batch`` again, by the general reader, of a batch whose file ``name`` changed while it was read
    (``how``): each file as it is now (its status taken again, so the next run compares the file with what was
    staged), but a file gone meanwhile, which keeps what an earlier run staged of it (as a file deleted between
    runs does), or is left for the run that finds it under its new name."""
    now: list[LogFile] = []
    gone: list[FileResult] = []
    for log in logs:
        plan.heads.pop(log.relative, None)  # the head read before the change is not the file's
        if log.error:  # unreadable when found: quarantined as one record, as before
            now.append(log)
            continue
        try:
            status = os.stat(log.path)
        except OSError:
            before = conn.execute("select rows_in, rows_accepted, rows_quarantined from stage.files "
                                  "where source_file = $name", {"name": log.relative}).fetchall()
            gone.append(FileResult(log.relative, *(before[0] if before else (0, 0, 0)), skipped=True,
                                   note=GONE_NOTE.format(kept="its earlier rows are kept" if before else "nothing staged")))
            continue
        # a file replaced under its name (rotated) is staged as the file it is now: the rotated one is found by its
        # identity under its new name by the next run; an object's copy cannot change
        now.append(replace(log, device=status.st_dev, inode=status.st_ino, size_bytes=status.st_size,
                           mtime_ns=stored_mtime_ns(status)) if log.local else log)
    results = _stage_batch(conn, now, plan, earliest, latest, fast_lane=False, rereads=rereads) if now else []
    return [replace(r, note=CHANGED_NOTE.format(how=HOW_CHANGED.get(how, how))) if r.source_file == name else r for r in results] + gone


def _stage_segments(conn: duckdb.DuckDBPyConnection, logs: list[LogFile], segments: list[_Segment], plan: generations.Plan,
                    params: dict, defaults: dict, lane_offset: int, again: pa.Table | None,
                    check_found: bool = True, append: appends.Append | None = None) -> list[FileResult]:
    """``_stage_batch`` after the fast lane: the general normaliser for what it deferred or did not read, the
    fingerprints of every logged request body (``again``: the lane's lines to read again, ``_lane_reads``), then publish."""
    next_base = max((s.base + s.span for s in segments if s.in_lane), default=0)
    wanted = deferred = None
    if again is not None:
        wanted = again["number"].combine_chunks()
        deferred = wanted.filter(again["deferred"].combine_chunks())
    wanted_numbers = None if wanted is None else wanted.to_numpy(zero_copy_only=False)
    deferred_numbers = None if deferred is None else deferred.to_numpy(zero_copy_only=False)
    pending: list[pa.Table] = []
    prints: list[pa.Table] = []  # fingerprint rows not yet inserted (_insert_fingerprints)
    unreadable_rows: list[Unreadable] = []
    replays: list[_Segment] = []
    read_again: list[_Segment] = []  # the lane's segments whose lines were read again from their files

    def collect(work: _ChunkWork, last_text_by_app: dict) -> None:
        """Finish a chunk's fingerprints (file order); its rows go to the normaliser and the fingerprint table by size."""
        nonlocal pending
        chunk_prints, chunk = work.finish(last_text_by_app)
        if chunk is not None and chunk.num_rows:
            pending.append(chunk)
        if chunk_prints is not None:
            prints.append(chunk_prints)
            if sum(t.num_rows for t in prints) >= PRINTS_ROWS:
                _insert_fingerprints(conn, prints)
        # by size, not per chunk read: each pass of the normaliser costs about 0.4 s however few its
        # rows, and a chunk whose request bodies were cut holds a tenth of the bytes it was read with
        if sum(t.nbytes for t in pending) >= CHUNK_BYTES:
            _normalise(conn, pending, params)
            pending = []

    if check_found:
        _pin_heads(segments, plan.heads)
    for segment in segments:
        log = segment.log
        if segment.in_lane and not _any_in(wanted_numbers, segment.base + 1, segment.base + segment.span):  # line 0: the placeholder
            continue
        progress.doing("reading request bodies and the lines the lane left" if segment.in_lane
                       else f"reading {log.relative}")
        if log.error:
            found = [Unreadable(0, log.error, _excerpt_of_error(log.error))]
            tables: list[pa.Table] = []
        elif segment.line_starts is not None:  # read again only the blocks that hold a line to read again
            found, tables = _read_lines_at(log, segment.text_path or log.path, segment.line_starts, wanted_numbers,
                                           deferred_numbers)
        else:
            found, tables = _read_file(log, streaming=len(logs) == 1)
            if found and found[0].source_line == 0 and found[0].reason.startswith("cannot read file"):
                segment.error = found[0].reason
        if not segment.in_lane:
            segment.base = next_base
        elif segment.lane_read is not None:
            read_again.append(segment)
        last_text_by_app: dict[tuple, str] = {}
        transcript: dict = {}  # a session transcript's running state across chunks (containers.reshape)
        top = segment.base
        in_flight: deque[_ChunkWork] = deque()  # chunks whose bodies the workers are measuring, oldest first

        try:
            for records in tables:
                if isinstance(records, _LaneRange):  # lines the lane accepted, fingerprinted only: a worker reads them
                    in_flight.append(_RangeWork.submit(records, log.defaults, found))
                    while len(in_flight) > RANGES_IN_FLIGHT:
                        collect(in_flight.popleft(), last_text_by_app)
                    continue
                if segment.base:
                    records = records.set_column(0, "source_line", pc.add(records["source_line"], segment.base))
                lane_bodies = None  # lines the lane accepted that log a request body: fingerprinted, not normalised again
                if segment.in_lane:
                    records = records.filter(_among(records["source_line"], wanted_numbers))
                    in_normaliser = _among(records["source_line"], deferred_numbers)
                    lane_bodies = records.filter(pc.invert(in_normaliser))
                    records = records.filter(in_normaliser)
                    if records.num_rows == 0 and lane_bodies.num_rows == 0:
                        continue
                if records.num_rows:
                    top = max(top, pc.max(records["source_line"]).as_py())
                in_flight.append(_submit_chunk(containers.reshape(records, transcript), log.defaults, lane_bodies))
                while sum(isinstance(work, _ChunkWork) for work in in_flight) > CHUNKS_IN_FLIGHT:
                    collect(in_flight.popleft(), last_text_by_app)  # the next chunk was read while the workers measured
            while in_flight:
                collect(in_flight.popleft(), last_text_by_app)
        except OSError as exc:  # (a worker's read raises it here again)
            if segment.lane_read is None:
                raise
            raise _FileChanged(log.relative, f"no longer readable: {exc.strerror or exc}") from exc
        finally:
            for work in in_flight:  # a read failed mid-file: what went to the workers is freed
                work.release()
        for item in found:
            unreadable_rows.append(Unreadable(item.source_line + segment.base, item.reason, item.raw_excerpt))
            top = max(top, item.source_line + segment.base)
        if not segment.in_lane:
            segment.span = top - segment.base + 1
            next_base = segment.base + segment.span
        replays.append(segment)
    for segment in read_again:  # from the bytes the lane read, or the batch is read again (_stage_batch)
        if how := _changed_since(segment.log.path, segment.lane_read):
            raise _FileChanged(segment.log.relative, how)
    _normalise(conn, pending, params)
    _insert_fingerprints(conn, prints)
    if unreadable_rows:
        _register_and_run(conn, "unreadable_in", pa.table({
            "source_line": pa.array([u.source_line for u in unreadable_rows], pa.int64()),
            "reason": [u.reason for u in unreadable_rows],
            "raw_excerpt": [u.raw_excerpt for u in unreadable_rows],
        }), "ingest/file_rows__add_unreadable")
    _replay_traces(conn, params["block_size"], defaults, replays)
    if append is not None and _depends_on_earlier_lines(conn):
        raise _NotAppendable
    heads = [None if s.error else _head(s.log, plan.heads) for s in segments]
    tails = [append.tail_sha] if append is not None else [None if head is None else _tail_sha(s.log)
                                                          for s, head in zip(segments, heads)]
    read = _lane_extent(segments[0]) if len(segments) == 1 and append is None else None
    if read is not None:  # the bytes the lane read, past the size found: what the manifest records of it
        logs = [replace(logs[0], size_bytes=read[0], mtime_ns=read[1])]
        segments[0].log, tails = logs[0], [read[2]]
    if check_found:  # head and tail were read by name: they are the found file's, or the batch is read again
        for segment, head in zip(segments, heads):
            if how := _replaced_since_found(segment, head):
                raise _FileChanged(segment.log.relative, how)
    batch_files = pa.table({
        "source_file": [s.log.relative for s in segments],
        "base": pa.array([s.base for s in segments], pa.int64()),
        "span": pa.array([s.span if len(logs) > 1 else 2**62 for s in segments], pa.int64()),
        "size_bytes": pa.array([append.end if append else s.log.size_bytes for s in segments], pa.int64()),
        "mtime_ns": pa.array([s.log.mtime_ns for s in segments], pa.int64()),
        "defaults_sha": [s.log.defaults_sha for s in segments],
        "device": pa.array([None if s.error else s.log.device for s in segments], pa.int64()),
        "inode": pa.array([None if s.error else s.log.inode for s in segments], pa.int64()),
        "head_bytes": pa.array([None if head is None else len(head) for head in heads], pa.int64()),
        "head_sha": pa.array([None if head is None else generations.head_sha(head) for head in heads], pa.string()),
        "tail_sha": pa.array(tails, pa.string()),
        "read_error": pa.array([s.error for s in segments], pa.string()),
        "staged_version": pa.array([generations.STAGED_ROWS_VERSION] * len(segments), pa.int32()),
        # an appended part: published beside the file's staged rows, its lines numbered after theirs
        "appended": pa.array([append is not None] * len(segments), pa.bool_()),
        "line_offset": pa.array([append.lines_before if append else 0] * len(segments), pa.int64()),
        "lines_staged": pa.array([append.lines if append else None] * len(segments), pa.int64()),
    })
    progress.doing("publishing to core.usage")
    _create_staged_items(conn, batch_files, lane_offset)
    conn.execute(statement("ingest/staged_items__supersede_snapshots"))
    actions = {"retire": [(name, plan.retire[name]) for name in batch_files["source_file"].to_pylist() if name in plan.retire],
               "drop": [old for name in batch_files["source_file"].to_pylist() for old in plan.takes_over.get(name, [])]}
    _publish(conn, batch_files, conn.execute("select distinct provider, model from staged_items where reason is null").fetchall(),
             actions)
    names = batch_files["source_file"].to_pylist()
    counts = {row[0]: row[1:] for row in conn.execute(
        "select source_file, rows_in, rows_accepted, rows_quarantined from stage.files where source_file in "
        "(select unnest($names))", {"names": names}).fetchall()}
    return [FileResult(s.log.relative, *counts[s.log.relative], error=s.error, note=s.note) for s in segments]


def _lane_extent(segment: _Segment) -> tuple[int, int, str] | None:
    """(size, mtime_ns, tail_sha) of the bytes the fast lane read of a plain file found here, when it read past the
    size the file was found with (it was written meanwhile: DuckDB and the count read to its end), else None. The
    manifest records what was read, so the next run's appended part starts after it (``appends``; without this a log
    written while it was staged had its new lines staged twice, then was read whole every night). The mtime is the
    file's now when that is its size still, else the one found (then the next run sees it grew)."""
    read = segment.lane_read
    if read is None or segment.error or read.size == segment.log.size_bytes:
        return None
    try:
        status = os.stat(segment.log.path)
    except OSError:
        return None
    same = _same_identity(status, read.device, read.inode) and status.st_size == read.size
    return read.size, stored_mtime_ns(status) if same else segment.log.mtime_ns, generations.head_sha(read.tail)


def _depends_on_earlier_lines(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether the batch read holds a record whose row may depend on the lines before it (``appends``): a logged
    request body (fingerprinted), a streamed snapshot or a trace record."""
    stateful = [name for name, f in formats.load().formats.items() if f.options["snapshots"] or f.convention == "trace"]
    return conn.execute("select exists(select 1 from file_fingerprints) "
                        "or exists(select 1 from file_rows where list_contains($formats, source_format))",
                        {"formats": stateful}).fetchall()[0][0]


def _read_file(log: LogFile, streaming: bool) -> tuple[list[Unreadable], Iterator[pa.Table] | list[pa.Table]]:
    """The file's record chunks (a generator when ``streaming``, else read whole) and what could not be read.

    A file that cannot be opened or read (permission denied, an I/O error) becomes one unreadable
    record at line 0 with the reason; when it fails part way, the chunks read so far are dropped
    with it, so a file is staged whole or as that one record.
    """
    found: list[Unreadable] = []
    if streaming:
        if (refused := _unopenable(log)) is not None:
            return refused, []
        return found, read_records(log, found)
    try:
        return found, list(read_records(log, found))
    except OSError as exc:
        reason = f"cannot read file: {exc.strerror or exc}"
        return [Unreadable(0, reason, _excerpt_of_error(reason))], []


def _head(log: LogFile, heads: dict[str, bytes | None]) -> bytes | None:
    """The file's first ``HEAD_BYTES`` (decompressed), as read already or now; None when it cannot be read."""
    if log.error:
        return None
    if heads.get(log.relative) is None:
        try:
            heads[log.relative] = read_head(log.path)
        except OSError:
            return None
    return heads[log.relative][:HEAD_BYTES]


def _tail_sha(log: LogFile) -> str | None:
    """sha256 of the last ``HEAD_BYTES`` of the file's size when found (plain files; None for gzip or unreadable)."""
    if log.is_gzip:
        return None
    try:
        return generations.head_sha(read_tail(log.path, log.size_bytes))
    except OSError:
        return None


def _excerpt_of_error(reason: str) -> str:
    return json.dumps({"failed_at": reason})


def _among(numbers: pa.ChunkedArray, sorted_values: np.ndarray) -> pa.Array:
    """Whether each of ``numbers`` is one of ``sorted_values`` (ascending), by binary search: ``pc.is_in`` builds a
    hash set of its whole value set per call, which for a file's every line (500,000 lines with request bodies)
    and each 16 MB block cost 24 s of a 110 s run."""
    values = numbers.to_numpy()
    if len(sorted_values) == 0:
        return pa.array(np.zeros(len(values), bool))
    found = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return pa.array(sorted_values[found] == values)


def _any_in(sorted_values: np.ndarray | None, low: int, high: int) -> bool:
    """Whether any of ``sorted_values`` (ascending) lies in ``[low, high)``; False for None."""
    if sorted_values is None:
        return False
    return bool(np.searchsorted(sorted_values, high) > np.searchsorted(sorted_values, low))


def _normalise(conn: duckdb.DuckDBPyConnection, chunks: list[pa.Table], params: dict) -> None:
    """Run the general normaliser over ``(source_line, line, source_item)`` chunks into file_rows (a chunk's
    lines are read by each stage from the registered ``lines_in``, never copied into the stages' tables)."""
    if not chunks:
        return
    chunk = pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]
    # a byte-order mark opening a line that is not the file's first: files (or gzip members) joined with `cat`, each
    # opening with one (a break test: those lines were quarantined as "Unexpected UTF-8 BOM"); DuckDB's JSON refuses it
    lines = chunk["line"]
    if pc.any(pc.starts_with(lines, "\ufeff")).as_py():
        chunk = chunk.set_column(chunk.schema.get_field_index("line"), "line", pc.replace_substring_regex(lines, "^\ufeff", ""))
    _normalise_within_memory(conn, chunk, params)


def _normalise_within_memory(conn: duckdb.DuckDBPyConnection, chunk: pa.Table, params: dict,
                             probed: bool = False) -> None:
    """``_normalise_chunk``; a chunk whose statements pass DuckDB's memory limit is normalised in halves, and a record
    that passes it alone is quarantined naming its size and the limit: one 50 MB line failed the whole run, every
    other file of it unstaged (a break test). Each try starts over: the stages write temporary tables only, and
    file_rows only in the last statement.

    Before halving, the chunk's shortest record is normalised alone: when even it passes the limit, the limit is too
    low for any record, and the ``duckdb.OutOfMemoryException`` is raised at once (the run stops naming the setting,
    ``runner``). Halving would have tried about two statements per record before quarantining every record as too
    large: a run at a 30MB limit spent 56 s on the 540 lines of one demo day before failing, and a day of millions of
    lines would take hours."""
    try:
        _normalise_chunk(conn, chunk, params)
    except duckdb.OutOfMemoryException:
        if chunk.num_rows > 1:
            if not probed:
                shortest = int(np.argmin(pc.binary_length(chunk["line"]).to_numpy(zero_copy_only=False)))
                _normalise_chunk(conn, chunk.slice(shortest, 1), params)  # raises when the limit fits no record
                rest = np.ones(chunk.num_rows, bool)
                rest[shortest] = False
                chunk = chunk.filter(pa.array(rest))
            half = chunk.num_rows // 2
            if half == 0:  # (the probe was the chunk's other record)
                _normalise_within_memory(conn, chunk, params, probed=True)
                return
            _normalise_within_memory(conn, chunk.slice(0, half), params, probed=True)
            _normalise_within_memory(conn, chunk.slice(half), params, probed=True)
            return
        size = pc.binary_length(chunk["line"])[0].as_py() / 2**20
        reason = (f"record of {size:,.1f} MB: normalising it needs more memory than DuckDB's memory limit allows "
                  f"(CACHEMETER_MEMORY_LIMIT={warehouse.configured_memory_limit()}: touch the file and run again with a larger one)")
        _register_and_run(conn, "too_large_in", pa.table({
            "source_line": chunk["source_line"].cast(pa.int64()), "source_item": chunk["source_item"].cast(pa.int32()),
            "reason": [reason], "raw_excerpt": [_excerpt_of_error(reason)]}), "ingest/file_rows__add_too_large")


def _normalise_chunk(conn: duckdb.DuckDBPyConnection, chunk: pa.Table, params: dict) -> None:
    """The general normaliser's statements over one chunk, into file_rows."""
    # item numbers the chunk's rows: the stages carry it instead of the line text (shaped_items__create.sql)
    conn.register("lines_in", chunk.append_column("item", pa.array(np.arange(chunk.num_rows), pa.int64())))
    try:
        _run(conn, SHAPE, params)
        _run(conn, FIELDED, params)
        present = {row[0] for row in conn.execute("select distinct source_format from shaped_items").fetchall()}
        for name in formats.load().formats:
            if name in present:  # each format's statement reads only its own items
                _run(conn, f"ingest/fields/{name}", params)
        _run(conn, VALIDATE, params)
        _run(conn, UNMAPPED, params)
        _run(conn, NORMALISE, params)
        _describe_malformed(conn, chunk)
    finally:
        conn.unregister("lines_in")
        for table in ("shaped_items", "fielded_items", "validated_items", "unmapped_usage"):
            conn.execute(f"drop table if exists {table}")


def _run(conn: duckdb.DuckDBPyConnection, name: str, params: dict) -> None:
    """Execute ``sql/<name>.sql`` with the parameters it names."""
    text = statement(name)
    conn.execute(text, params_for(text, params))


PUBLISH = ("ingest/batch_usage_rows__create_view", "ingest/touched_ids__create", "ingest/restaged_ids__create",
           "ingest/pending_days__insert_batch",
           "ingest/usage__retire_files", "ingest/duplicate_rows__retire_files", "ingest/quarantine__retire_files",
           "ingest/files__retire_files",
           "ingest/usage__delete_files", "ingest/duplicate_rows__delete_files", "ingest/quarantine__delete_files",
           "ingest/files__delete_files")
PUBLISH_NEW = ("ingest/usage__insert_batch", "ingest/quarantine__insert_batch", "ingest/files__insert_batch",
               "ingest/files__update_appended",
               "ingest/duplicate_copies__create", "ingest/usage__delete_duplicate_losers",
               "ingest/usage__insert_duplicate_winners", "ingest/duplicate_rows__delete_touched",
               "ingest/duplicate_rows__insert_losers", "ingest/quarantine__delete_touched_duplicates",
               "ingest/quarantine__insert_duplicate_losers", "ingest/files__apply_duplicate_counts",
               "ingest/pending_days__insert_duplicate_copies")


UNACCEPTED_NONE = "create or replace temp table unaccepted_before as select null::varchar as source_file, null::date as day limit 0"


def _unaccepted_files(conn: duckdb.DuckDBPyConnection) -> int:
    """How many staged files have quarantined rows and none accepted (a read of the small stage.files): the rare
    case in which pending_days__insert_unaccepted_files.sql has work, which reads every usage day."""
    return conn.execute("select count(*) from stage.files where rows_accepted = 0 and rows_quarantined > 0").fetchone()[0]


def _create_staged_items(conn: duckdb.DuckDBPyConnection, batch_files: pa.Table, lane_offset: int) -> None:
    """The batch's records under their own files and lines: the temp view ``staged_items``.

    ``batch_files``: source_file, base, span of each file of the batch; ``lane_offset``: a lane row's batch number is
    its rowid + ``lane_offset``. A batch of one file leaves its lane rows in ``fast_items``, read through the view
    (``sql/ingest/staged_items__create_view.sql``); otherwise they are mapped to their files with the general rows
    into the temp table ``staged_general`` (``staged_items__create.sql``). The three statements read the batch's
    facts as DuckDB variables, since views take no parameters.
    """
    one_file = batch_files["source_file"][0].as_py() if batch_files.num_rows == 1 else None
    line_offset = batch_files["line_offset"][0].as_py() if batch_files.num_rows == 1 else 0  # (an appended part's)
    for name, value in (("staged_lane_file", one_file), ("staged_lane_offset", lane_offset),
                        ("staged_line_offset", line_offset), ("staged_batch_marker", BATCH_MARKER)):
        conn.execute(f"set variable {name} = $value", {"value": value})
    conn.execute(statement("ingest/lane_items__create_view"))
    conn.register("batch_files", batch_files)
    try:
        conn.execute(statement("ingest/staged_items__create"))
    finally:
        conn.unregister("batch_files")
    conn.execute(statement("ingest/staged_items__create_view"))


def _publish(conn: duckdb.DuckDBPyConnection, batch_files: pa.Table | list, models: list, actions: dict) -> None:
    """Replace the batch's files' rows in core.usage, core.quarantine and the manifest in one transaction.

    ``actions``: ``retire`` (name, history name) pairs whose previous generation is kept under the
    history name, and ``drop`` names whose rows a batch file takes over (or an unchanged file holds).
    Then the duplicate rule is applied to every id whose copies changed (``touched_ids__create.sql``).
    """
    if not isinstance(batch_files, pa.Table):  # no files: only drops
        conn.execute(statement("ingest/file_rows__create"))
        conn.execute(statement("ingest/fast_items__create"))
        batch_files = pa.table({"source_file": pa.array([], pa.string()), "base": pa.array([], pa.int64()),
                                "span": pa.array([], pa.int64()), "appended": pa.array([], pa.bool_()),
                                "line_offset": pa.array([], pa.int64())})
        _create_staged_items(conn, batch_files, 0)
        conn.execute(statement("ingest/file_fingerprints__create"))
    predecessors = pa.table({
        "source_file": pa.array([None] * (len(actions.get("retire", [])) + len(actions.get("drop", []))), pa.string()),
        "old_file": [old for old, _ in actions.get("retire", [])] + list(actions.get("drop", [])),
        "action": ["retire"] * len(actions.get("retire", [])) + ["drop"] * len(actions.get("drop", [])),
        "history_file": [new for _, new in actions.get("retire", [])] + [None] * len(actions.get("drop", [])),
    }) if actions.get("retire") or actions.get("drop") else pa.table({
        "source_file": pa.array([], pa.string()), "old_file": pa.array([], pa.string()),
        "action": pa.array([], pa.string()), "history_file": pa.array([], pa.string())})
    conn.register("batch_files", batch_files)
    conn.register("batch_predecessors", predecessors)
    conn.register("model_map", prices.model_map_table(models))
    try:
        with transaction(conn):
            unaccepted = _unaccepted_files(conn)
            conn.execute(statement("ingest/unaccepted_before__create") if unaccepted else UNACCEPTED_NONE)
            for name in PUBLISH:
                conn.execute(statement(name))
            faults.maybe_die("stage:mid_file")
            for name in PUBLISH_NEW:
                if name not in ("ingest/files__insert_batch", "ingest/files__update_appended") or batch_files.num_rows:
                    conn.execute(statement(name))
            if unaccepted or _unaccepted_files(conn):  # else no day holds such lines, before or after
                conn.execute(statement("ingest/pending_days__insert_unaccepted_files"))
    finally:
        for name in ("batch_files", "batch_predecessors", "model_map"):
            conn.unregister(name)


FAST_LANE_PARAMS = ("provider", "model", "tenant", "app", "default_ts", "deployment_names", "deployment_models",
                    "earliest", "latest")


def _batch_lane(conn: duckdb.DuckDBPyConnection, segments: list[_Segment], params: dict,
                heads: dict[str, bytes | None], scratch: Path) -> tuple[int, pa.Table | None]:
    """Run the fast lane over the batch's JSONL files; returns (rowid offset, the batch numbers to read again,
    ``_lane_reads``) or (0, None).

    One large file is read where it lies (its path escaped, ``_fast_lane``); many small files are
    copied into one temporary JSONL file and read once: each file's lines follow a placeholder
    ``{}`` for its line 0, and blank lines become ``{}`` too, so row ``r`` of the read is batch number
    ``r`` (the placeholders are never records and the general reader skips blank lines). Marks the
    segments the lane read (``in_lane``) with their base and span. ``scratch``: a folder that outlives the
    batch's reading, for a gzip file's decompressed text (``_fast_lane``).
    """
    if len(segments) == 1:
        segment = segments[0]
        if segment.log.error:
            return 0, None
        starts: list = []
        text_path = scratch / "text.jsonl" if segment.log.is_gzip else None
        failures: list[str] = []
        edges: list[bytes] = []
        again = _fast_lane(conn, segment.log, params, starts, text_path, failures, edges)
        segment.note = _lane_note(failures)
        if again is None:
            return 0, None
        segment.in_lane, segment.base, segment.span = True, 0, 2**62
        segment.line_starts, segment.text_path = starts or None, text_path
        if text_path is None and starts and edges and _found_here(segment.log):  # (a gzip file's from our copy)
            segment.lane_read = _LaneRead(segment.log.device, segment.log.inode, starts[-1][0], *edges)
        return 1, again
    parts: list[bytes] = []
    lines = 0
    trims: list[int] = []  # batch numbers of lines holding a vertical tab or form feed (_lane_trims)
    lane: list[_Segment] = []
    for segment in segments:
        log = segment.log
        if log.error or not log.is_jsonl:
            continue
        try:
            data = raw = heads.get(log.relative)
            if data is None or len(data) != log.size_bytes or log.is_gzip:  # not read whole by generations.plan
                with open(log.path, "rb") as handle:
                    data = raw = handle.read()
                if log.is_gzip:
                    data = gzip.decompress(data)
                heads[log.relative] = data[:HEAD_BYTES]
        except (OSError, EOFError, zlib.error):
            continue  # the general reader reports it (or keeps what decodes of a cut gzip stream)
        if wide_encoding(data[:HEAD_BYTES]):
            continue  # UTF-16 or UTF-32: the general reader reads its UTF-8 text (DuckDB reads UTF-8 only)
        ends = data.endswith(b"\n")
        parts.append(b"{}\n")
        if data and b"\n\n" not in data and not data.startswith(b"\n") and not data.isspace():
            parts.append(data if ends else data + b"\n")  # no empty line: copied whole (a line of spaces is deferred)
            count = data.count(b"\n") + (not ends)
        else:
            pieces = data.split(b"\n")
            if ends:
                pieces.pop()
            parts.extend(piece + b"\n" if piece.strip() else b"{}\n" for piece in pieces)
            count = len(pieces)
        segment.in_lane, segment.base, segment.span = True, lines, count + 1
        segment.lane_read = _lane_read_of(log, raw)  # its lines are read again from the file (_read_file)
        trims += [lines + n for n in _trimmed_lines(data)]
        lines += count + 1
        lane.append(segment)
    if not lane:
        return 0, None
    with tempfile.TemporaryDirectory(prefix="cachemeter-batch-") as folder:
        combined = Path(folder) / "batch.jsonl"
        combined.write_bytes(b"".join(parts))
        literal = duckdb_literal_path(combined)
        try:
            ran = literal is not None
            if ran:
                conn.execute(statement("ingest/fast_items__read_jsonl"),
                             {"path": literal, **{name: params[name] for name in FAST_LANE_PARAMS}})
        except duckdb.Error as error:
            ran = False
            for segment in lane:
                segment.note = _lane_note([_first_line(error)])
    if not ran or conn.execute("select count(*) from fast_items").fetchall()[0][0] != lines:
        conn.execute(statement("ingest/fast_items__create"))
        for segment in lane:
            segment.in_lane = False
        return 0, None
    _lane_trims(conn, trims, 0)
    return 0, _lane_reads(conn, 0)


def _fast_lane(conn: duckdb.DuckDBPyConnection, log: LogFile, params: dict,
               line_starts: list | None = None, text_path: Path | None = None,
               failures: list[str] | None = None, edges: list | None = None) -> pa.Table | None:
    """Normalise a plain JSONL file's common records with DuckDB's parallel reader; returns the lines to read
    again (``_lane_reads``: the deferred ones and those logging a request body).

    ``sql/ingest/fast_items__read_jsonl.sql`` accepts the records the general normaliser would
    accept with the same values (plain envelopes around OpenAI, Anthropic, Gemini or Bedrock Converse
    bodies) into ``fast_items``, and returns the line numbers (int64, ascending) of every other
    record, for the general normaliser. The path is passed with its glob characters escaped
    (``discover.duckdb_literal_path``), so DuckDB reads exactly this file. Returns None when the lane
    does not apply: not a JSONL file, a name that is not UTF-8, an empty file, a gzip file cut short
    or damaged (the general reader keeps what precedes the damage), a file with blank lines (DuckDB
    numbers only non-blank lines, so its row positions would not be line numbers), or a file DuckDB's
    reader fails on as a whole (then its first line is appended to ``failures``, when given, for the file's
    ``FileResult.note``). ``line_starts`` (when given) is filled with where its blocks' lines start
    (``count_lines``), so the deferred lines are read again block by block, not whole; ``edges`` (when given) with
    the first and last ``HEAD_BYTES`` of the bytes counted (``count_lines``).

    A gzip file is decompressed once: its text is written to ``text_path`` while its lines are counted, and
    DuckDB and the block re-read read that copy (``line_starts`` are its offsets), so the compressed file is
    read once rather than by the count, DuckDB and the general reader in turn (three decompressions); DuckDB
    reads the plain copy in parallel too. Without ``text_path`` a temporary copy is removed on return (then
    ``line_starts`` is left empty). The copy takes the text's size on the temporary folder's disk.
    """
    if not log.is_jsonl or (not log.is_gzip and duckdb_literal_path(log.path) is None):  # a copy's name is ours
        return None
    if not log.is_gzip:
        try:
            if wide_encoding(read_head(log.path)):  # UTF-16 or UTF-32: the general reader reads its UTF-8 text
                return None
        except OSError:
            return None  # the general reader reports it
    if log.is_gzip and text_path is None:
        with tempfile.TemporaryDirectory(prefix="cachemeter-lane-") as folder:
            return _fast_lane(conn, log, params, None, Path(folder) / "text.jsonl", failures)
    read_path = text_path if log.is_gzip else log.path
    literal = duckdb_literal_path(read_path)
    if literal is None:
        return None
    trims: list[int] = []

    def count() -> int | None:
        try:
            return (count_lines(log.path, starts=line_starts, copy_to=text_path, trimmed=trims, edges=edges)
                    if log.is_gzip else count_lines(log.path, starts=line_starts, trimmed=trims, edges=edges))
        except (EOFError, OSError, zlib.error):  # gzip.BadGzipFile is an OSError
            return None

    # a large plain file is counted in a thread while DuckDB reads it (the count is single-threaded: a core stood
    # idle); a gzip file's text is the copy DuckDB reads, so it is counted first, as a small file is
    beside = not log.is_gzip and log.size_bytes >= COUNT_BESIDE_BYTES
    with ThreadPoolExecutor(max_workers=1) as counter:
        counting = counter.submit(count) if beside else None
        if not beside and not (lines := count()):
            return None
        if log.is_gzip and wide_encoding(read_head(text_path)):  # (of its text, decompressed once by the count)
            return None  # UTF-16 or UTF-32: the general reader reads its UTF-8 text
        try:
            conn.execute(statement("ingest/fast_items__read_jsonl"),
                         {"path": literal, **{name: params[name] for name in FAST_LANE_PARAMS}})
        except duckdb.Error as error:  # e.g. an object above DuckDB's maximum_object_size, or out of memory
            if failures is not None and (not beside or counting.result()):  # (not for a file that cannot be read)
                failures.append(_first_line(error))
            return None  # the general reader takes the file (same rows, many times slower)
        if beside:
            lines = counting.result()
    if not lines or conn.execute("select count(*) from fast_items").fetchall()[0][0] != lines:
        conn.execute(statement("ingest/fast_items__create"))  # empty again: the general normaliser takes the file
        return None
    _lane_trims(conn, trims, 1)
    return _lane_reads(conn, 1)


def _trimmed_lines(data: bytes) -> list[int]:
    """Numbers (from 1) of the lines of ``data`` that hold a vertical tab or form feed byte (``_lane_trims``)."""
    if b"\x0b" not in data and b"\x0c" not in data:
        return []
    text = np.frombuffer(data, np.uint8)
    at = np.flatnonzero((text == 0x0B) | (text == 0x0C))
    return np.unique(1 + np.searchsorted(np.flatnonzero(text == NEWLINE), at)).tolist()


def _lane_trims(conn: duckdb.DuckDBPyConnection, numbers: list[int], offset: int) -> None:
    """Defer the lane's rows ``numbers`` (rowid + ``offset``): lines holding a vertical tab or form feed byte. DuckDB's
    line reader trims those around a record as whitespace, where JSON (the general normaliser, Python's json) calls
    the line malformed; inside a string they make it malformed for both, so deferring them changes no outcome."""
    if numbers:
        conn.execute("update fast_items set accepted = false where rowid + $offset in (select unnest($numbers))",
                     {"offset": offset, "numbers": numbers})


def _lane_reads(conn: duckdb.DuckDBPyConnection, offset: int) -> pa.Table:
    """The lines the fast lane leaves to Python, ascending: ``number`` (int64: rowid + ``offset``, the line or batch
    number) and ``deferred`` (bool: true for the general normaliser; false for an accepted line that logs a request
    body, read again only for its fingerprint)."""
    return conn.execute("select rowid + $offset as number, not accepted as deferred from fast_items "
                        "where not accepted or has_request order by 1", {"offset": offset}).to_arrow_table()


def _first_line(error: Exception) -> str:
    """The first line of an error's message (DuckDB's carry a multi-line hint)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _lane_note(failures: list[str]) -> str | None:
    """The note a file gets when the fast reader failed on it (``FileResult.note``), or None."""
    if not failures:
        return None
    # DuckDB names the file it read, which may be this run's temporary copy (a gzip file's text), gone by the time the
    # note is read; and the memory advice only where memory was the cause (a break test: both misled for a
    # pretty-printed array under a .jsonl name)
    reason = re.sub(r' in file "[^"]*"', "", failures[0])
    memory = "; raise CACHEMETER_MEMORY_LIMIT for it" if "memory" in reason.lower() else ""
    return f"read by the general reader, many times slower: the fast reader failed ({reason}){memory}"


def count_lines(path: Path, block_bytes: int = 16 * 1024 * 1024, starts: list | None = None,
                copy_to: Path | None = None, trimmed: list | None = None, edges: list | None = None) -> int:
    """Lines in a file (of its decompressed text for ``*.gz``): newlines, plus one for a last line
    without its newline (0 for an empty file).

    ``starts``, when given, is filled with ``(byte offset, line number)`` of the first line that starts in
    each block (``(0, 1)`` first), then ``(text size, None)``: each range between two entries holds whole
    lines, so a line can be read again by reading its range only (``readers.read_line_ranges``); offsets are
    of the text (decompressed for ``*.gz``). ``copy_to``, when given, receives the text as it is counted (a
    gzip file's decompressed copy, which those offsets then address). ``trimmed``, when given, is filled with the
    numbers of the lines that hold a vertical tab or form feed byte (``_lane_trims``). ``edges``, when given, is
    filled with the first and the last ``HEAD_BYTES`` of the text counted (``_LaneRead``: whether the file still
    holds them when its lines are read again).

    Blocks are read into one reused buffer and their newlines counted with NumPy's vectorised compare
    (0.9 s for a 1.9 GB file here, against 1.9 s for ``bytes.count`` over fresh blocks). Raises
    ``EOFError`` for a gzip stream cut short and ``OSError`` (``gzip.BadGzipFile``) or ``zlib.error``
    for a damaged one.
    """
    count, last, offset = 0, b"\n", 0
    head, tail = b"", b""
    buffer = bytearray(block_bytes)
    view = memoryview(buffer)
    if starts is not None:
        starts[:] = [(0, 1)]
    opened = gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb", buffering=0)
    with opened as handle, (open(copy_to, "wb") if copy_to is not None else contextlib.nullcontext()) as copy:
        while size := handle.readinto(buffer):
            if copy is not None:
                copy.write(view[:size])
            found, first, trims = _block_lines(buffer, size)
            if trimmed is not None and trims:
                trimmed.extend(count + n for n in _trimmed_lines(bytes(view[:size])))
            if starts is not None and found and offset:  # the line after this block's first newline starts here
                starts.append((offset + first + 1, count + 2))
            count += found
            if edges is not None:
                head = head or bytes(view[:min(size, HEAD_BYTES)])
                tail = (tail + bytes(view[max(0, size - HEAD_BYTES):size]))[-HEAD_BYTES:]
            offset += size
            last = bytes(view[size - 1:size])
    if starts is not None:
        while starts and starts[-1][0] >= offset:  # a start at the very end (after a final newline) starts no line
            starts.pop()
        starts.append((offset, None))
    if edges is not None:
        edges[:] = [head, tail]
    return count + (last != b"\n")


def block_lines_reference(buffer: bytearray, size: int) -> tuple[int, int, bool]:
    """Of ``buffer``'s first ``size`` bytes: how many newlines, the offset of the first (-1: none), and whether a
    vertical tab or form feed byte is among them (``_divergence.block_lines`` compiled, which ``count_lines`` uses
    where the install built it: ``tests/lib/test_divergence_compiled.py`` holds the two equal)."""
    newlines = np.frombuffer(memoryview(buffer)[:size], np.uint8) == NEWLINE
    found = int(np.count_nonzero(newlines))
    return found, int(np.argmax(newlines)) if found else -1, \
        buffer.find(b"\x0b", 0, size) >= 0 or buffer.find(b"\x0c", 0, size) >= 0


_block_lines = getattr(fingerprints.compiled, "block_lines", None) or block_lines_reference  # (a module built before it: Python)


def _unopenable(log: LogFile) -> list[Unreadable] | None:
    """The one unreadable record (line 0, with the reason) of a file that cannot be opened, else None: checked
    before a lazy read starts, so a refused file is one record rather than an error mid-stream."""
    try:
        with open(log.path, "rb"):
            return None
    except OSError as exc:
        reason = f"cannot read file: {exc.strerror or exc}"
        return [Unreadable(0, reason, _excerpt_of_error(reason))]


def _read_lines_at(log: LogFile, text_path: Path, starts: list[tuple[int, int]], numbers: np.ndarray,
                   deferred: np.ndarray | None = None) -> tuple[list[Unreadable], Iterator[pa.Table | _LaneRange]]:
    """The record chunks of the ranges of ``starts`` (``count_lines``) of ``text_path`` (the file, or a gzip
    file's decompressed copy) that hold one of ``numbers`` (line numbers, ascending), and what could not be
    read (as ``_read_file``). A range that holds none of ``deferred`` (the lines for the general normaliser) comes
    as a ``_LaneRange`` of its ``numbers``, for a worker to read (``_RangeWork``)."""
    found: list[Unreadable] = []
    if (refused := _unopenable(log)) is not None:
        return refused, []
    ranges = [(start, end, first, following if following is not None else 2**62)
              for (start, first), (end, following) in zip(starts, starts[1:])]

    def chunks() -> Iterator[pa.Table | _LaneRange]:
        for start, end, first, following in ranges:
            low, high = np.searchsorted(numbers, [first, following]) if numbers is not None else (0, 0)
            if numbers is not None and low == high:
                continue
            if deferred is not None and not _any_in(deferred, first, following):
                yield _LaneRange(text_path, start, end, first, numbers[low:high])
            else:
                yield from read_line_ranges(text_path, [(start, end, first)], found)
    return found, chunks()


RANGES_IN_FLIGHT = 4  # byte ranges whose lines the workers read and fingerprint ahead of the one collected (16 MB each)


@dataclass(frozen=True)
class _LaneRange:
    """A byte range of a JSONL text (``count_lines``' block: whole lines, the first numbered ``first``) and the numbers
    of its lines that the fast lane accepted and that log a request body (ascending)."""

    path: Path
    start: int
    end: int
    first: int
    numbers: np.ndarray


@dataclass
class _RangeWork:
    """A ``_LaneRange`` whose lines a worker reads and fingerprints (``body_chunks.submit_range``). ``finish`` gives
    their fingerprint rows (as ``_ChunkWork.finish``, with no chunk for the normaliser); a range the worker cannot
    read as UTF-8 is read here as ``read_line_ranges`` reads it, its unreadable lines added to ``found``."""

    lane_range: _LaneRange
    defaults: dict
    found: list[Unreadable]
    pending: body_chunks.RangePending

    @classmethod
    def submit(cls, lane_range: _LaneRange, defaults: dict, found: list[Unreadable]) -> _RangeWork:
        r = lane_range
        return cls(r, defaults, found, body_chunks.submit_range(r.path, r.start, r.end, r.first, r.numbers,
                                                                defaults.get("tenant"), defaults.get("app")))

    def finish(self, last_text_by_app: dict) -> tuple[pa.Table | None, None]:
        r, tenant, app = self.lane_range, self.defaults.get("tenant"), self.defaults.get("app")
        numbers = r.numbers.tolist()
        piece = self.pending.result(last_text_by_app)
        if piece is None:
            read = [t for t in read_line_ranges(r.path, [(r.start, r.end, r.first)], self.found)]
            lines = pa.concat_tables(read) if read else pa.table({"source_line": pa.array([], pa.int64()),
                                                                    "line": pa.array([], pa.string())})
            wanted = lines.filter(pc.is_in(lines["source_line"], value_set=pa.array(numbers, pa.int64())))
            numbers = wanted["source_line"].to_pylist()
            piece = body_chunks.fingerprint_lines(wanted["line"].combine_chunks(), tenant, app, last_text_by_app,
                                                  [False] * len(numbers))
        return _prints_of(piece, numbers), None

    def release(self) -> None:
        self.pending.release()


def _prints_of(piece: body_chunks.Piece, line_numbers: list[int]) -> pa.Table | None:
    """The fingerprint rows (``PRINTS_SCHEMA``) of ``piece``, its line indexes turned into ``line_numbers``; None
    when it has none."""
    if not piece.rows:
        return None
    columns: dict[str, list] = {name: [row[i] for row in piece.rows] for i, name in enumerate(PRINTS_SCHEMA.names)}
    columns["source_line"] = [line_numbers[i] for i in columns["source_line"]]
    return pa.table(columns, schema=PRINTS_SCHEMA)


@dataclass
class _ChunkWork:
    """A chunk whose request bodies are being fingerprinted (``_submit_chunk``). ``finish`` gives the fingerprints
    of the envelopes that carry a request body (a table of ``PRINTS_SCHEMA``, or None when there are none) and the
    chunk with those bodies cut down to what the usage normaliser reads of them (``fingerprints.without_request_body``:
    a logged prompt of tens of KB was parsed by it several times over, for one field). Finish them in file order:
    each measures its first requests against ``last_text_by_app``, the last texts of the chunks finished before it.

    The divergence is measured against the previous request of the same (tenant, app) earlier in the file (file
    order, which is arrival order for appended logs); only that one text per app is held in memory, and no text is
    stored."""

    chunk: pa.Table
    has_request: pa.Array | pa.ChunkedArray | None = None
    cut: list[bool] | None = None
    line_numbers: list[int] | None = None
    lines: pa.StringArray | None = None
    pending: body_chunks.Pending | None = None

    def finish(self, last_text_by_app: dict) -> tuple[pa.Table | None, pa.Table]:
        if self.pending is None:
            return None, self.chunk
        found, cut, lines, chunk = self.pending.result(last_text_by_app), self.cut, self.lines, self.chunk
        if chunk.num_rows:
            lines_out = [c or lines[i].as_py() for i, c in enumerate(found.cut) if cut is None or cut[i]]
            mask = self.has_request.combine_chunks() if isinstance(self.has_request, pa.ChunkedArray) else self.has_request
            chunk = chunk.set_column(chunk.schema.get_field_index("line"), "line", pc.replace_with_mask(
                chunk["line"].combine_chunks(), mask, pa.array(lines_out, chunk["line"].type)))
        return _prints_of(found, self.line_numbers), chunk

    def release(self) -> None:
        """Free what went to the workers, for work that will not be finished (a read failed mid-file)."""
        if self.pending is not None:
            self.pending.release()


def _submit_chunk(chunk: pa.Table, defaults: dict, lane_bodies: pa.Table | None = None) -> _ChunkWork:
    """Start fingerprinting the request bodies of ``chunk``: ``(source_line, line, source_item)`` items for the general
    normaliser, and of ``lane_bodies``: ``(source_line, line)`` lines of the same stretch of the file that the fast lane
    accepted and that log a request body (fingerprinted in file order with the chunk's, never cut, not returned). A
    large chunk's go to the worker pool and this returns at once (``body_chunks.submit_lines``)."""
    has_request = pc.and_(pc.equal(chunk["source_item"], 0), _may_hold_request(chunk["line"]))
    with_request = chunk.filter(has_request).select(["source_line", "line"])
    if lane_bodies is not None and lane_bodies.num_rows:
        to_cut = with_request["source_line"]
        with_request = pa.concat_tables([with_request, lane_bodies.select(["source_line", "line"])]).sort_by("source_line")
        cut = pc.is_in(with_request["source_line"], value_set=to_cut.combine_chunks()).to_pylist()
    else:
        cut = None  # every one
    if with_request.num_rows == 0:
        return _ChunkWork(chunk)
    lines = with_request["line"].combine_chunks()
    return _ChunkWork(chunk, has_request, cut, with_request["source_line"].to_pylist(), lines,
                      body_chunks.submit_lines(lines, defaults.get("tenant"), defaults.get("app"), cut))


# the key "request" with any of its letters written as a JSON \u escape (JSON readers decode keys: DuckDB's lane does)
_ESCAPED_REQUEST_KEY = '"' + "".join(f"(?:{c}|\\\\u{ord(c):04x})" for c in "request") + '"'


def _may_hold_request(lines: pa.ChunkedArray) -> pa.ChunkedArray:
    """Whether each line may hold a top-level ``"request"`` key (the ones that do are parsed for a fingerprint): its
    text, or, in a line with a ``\\u`` escape, the key with escaped letters, which the fast lane reads as ``request``."""
    literal = pc.match_substring(lines, '"request"')
    escaped = pc.and_(pc.match_substring(lines, "\\u00"), pc.match_substring_regex(lines, _ESCAPED_REQUEST_KEY))
    return pc.or_(literal, escaped)


def _insert_fingerprints(conn: duckdb.DuckDBPyConnection, prints: list[pa.Table]) -> None:
    """Insert the fingerprint rows of ``prints`` (``_ChunkWork.finish``'s tables) into file_fingerprints and empty the
    list: one insert per ``PRINTS_ROWS`` rows, not per block read (an insert per 16 MB block of bodies cost 3 s of
    500,000 bodies)."""
    if prints:
        _register_and_run(conn, "fingerprints_in", pa.concat_tables(prints), "ingest/file_fingerprints__insert")
        prints.clear()


def _describe_malformed(conn: duckdb.DuckDBPyConnection, chunk: pa.Table) -> None:
    bad = [row[0] for row in conn.execute(
        "select source_line from file_rows where reason = 'malformed JSON' and raw_excerpt is null").fetchall()]
    if not bad:
        return
    lines = chunk.filter(pc.and_(pc.equal(chunk["source_item"], 0), pc.is_in(chunk["source_line"], pa.array(bad, pa.int64()))))
    described = [malformed_json_excerpt(text) for text in lines["line"].to_pylist()]
    _register_and_run(conn, "malformed_in", pa.table({
        "source_line": lines["source_line"],
        "reason": [d[0] for d in described],
        "raw_excerpt": [d[1] for d in described],
    }), "ingest/file_rows__describe_malformed")


def _replay_traces(conn: duckdb.DuckDBPyConnection, block_size: int, defaults: dict, segments: list[_Segment]) -> None:
    """Replay each file's block-hash trace records through its own cache model (files never share a cache)."""
    table = conn.sql(statement("ingest/file_rows__trace_records")).to_arrow_table()
    if table.num_rows == 0:
        return
    import polars as pl  # here, not at the top: a run without trace records never pays its import (0.4 s)

    records = pl.from_arrow(table)
    lines, reads = [], []
    for segment in segments:
        own = records.filter((pl.col("source_line") >= segment.base) & (pl.col("source_line") < segment.base + max(segment.span, 1)))
        if own.height == 0:
            continue
        chains = own["hash_ids"].str.json_decode(pl.List(pl.Int64)).to_list()
        cache = cache_models.make_cache(defaults.get("cache", "infinite"), block_size,
                                        defaults.get("cache_ttl_seconds"), defaults.get("cache_capacity_tokens"))
        reads += cache_models.replay(chains, own["prompt_tokens"].to_list(), block_size, cache,
                                     own["trace_offset_ms"].to_list())
        lines += own["source_line"].to_list()
    _register_and_run(conn, "replay_in", pa.table({
        "source_line": pa.array(lines, pa.int64()),
        "cache_read_tokens": pa.array(reads, pa.int64()),
    }), "ingest/file_rows__apply_replay")


def _register_and_run(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table, sql_name: str) -> None:
    conn.register(name, table)
    try:
        conn.execute(statement(sql_name))
    finally:
        conn.unregister(name)
