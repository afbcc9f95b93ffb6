"""Lines appended to a staged log file: read only them, not the whole file again.

A log a gateway appends to night after night is the common case, and staging it again whole made each night cost the
file's whole history (``bench/append_day.py``: a day appended to ten took 4.5x the day alone). When a file at its staged
name is the same file (device, inode, its first and last staged bytes unchanged: ``generations``), has grown by whole
lines, and was staged by this version of staging, only the bytes after the staged size are read: copied once into a
temporary file of our own, their lines numbered after the staged ones (``lines_before``), and published beside the
file's rows, which stay (``stage._stage_appended``; ``sql/ingest/*`` read ``batch_files.appended``). A last line
without its newline is read as a whole staging reads it (a half-written one is quarantined as malformed); the staged
content then does not end in a newline, so the next run stages the file whole, as it did before, and reads it whole.
Lines edited in place before the staged end, keeping the file's first and last staged 4 KB, are not seen: the same
bytes identify a renamed or rotated file (``generations``), and logs are written by appending.

The appended lines stage exactly as they would in a staging of the whole file, as long as no line depends on the lines
before it. Those that may are found after the tail is read, and then the whole file is staged as before
(``stage._NotAppendable``): streamed snapshots (a later snapshot supersedes an earlier one of the same response), traces
(a block replay carries state through the file), logged request bodies (a body's divergence is measured against the
previous body of its app). Only plain JSON-lines files of at least ``MIN_STAGED_BYTES`` take this path (small files
are staged many at a time, whole).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pipelines.ingest import generations
from pipelines.ingest.discover import LogFile
from pipelines.ingest.readers import HEAD_BYTES, read_head, wide_encoding

MIN_STAGED_BYTES = 1 << 20  # staged content below this is staged again whole (stage.SMALL_FILE_BYTES: batched)
COPY_BLOCK = 16 * 1024 * 1024  # bytes copied or counted at a time


@dataclass(frozen=True)
class Append:
    """The lines appended to ``log`` since ``entry`` staged it: ``part`` (the LogFile of the temporary copy of bytes
    ``[entry.size_bytes, end)``, read as the file), ``lines_before`` (the lines of the staged content: the first
    appended line is line ``lines_before + 1``), ``end`` (the file's size as staged now),
    ``tail_sha`` (sha256 of the ``HEAD_BYTES`` before ``end``, the manifest's ``tail_sha``), ``lines`` (the lines
    up to ``end``: the manifest's ``lines_staged``, so the next append need not count them)."""

    log: LogFile
    part: LogFile
    lines_before: int
    end: int
    tail_sha: str
    lines: int


def may_append(log: LogFile, entry: generations.Entry | None) -> bool:
    """Whether ``log`` may be ``entry``'s file grown, by what the manifest and the listing say (no read): the cheap
    half of ``appended_part``'s test, asked first for every file staged (thousands of new small files in a run)."""
    return not (entry is None or log.error or not log.local or log.is_gzip or not log.is_jsonl or entry.read_error
                or entry.head_sha is None or entry.tail_sha is None or entry.device is None
                or entry.staged_version < generations.STAGED_ROWS_VERSION or entry.defaults_sha != log.defaults_sha
                or entry.size_bytes < MIN_STAGED_BYTES or log.size_bytes <= entry.size_bytes
                or (entry.device, entry.inode) != (log.device, log.inode))


def appended_part(log: LogFile, entry: generations.Entry | None, folder: Path, last_line: int = 0) -> Append | None:
    """The ``Append`` of ``log``, its copy written into ``folder``, or None when it is to be staged whole: not a plain
    local JSON-lines file (gzip, UTF-16, another format, an object store's copy, unreadable), no entry under its name,
    staged by an older version of staging or with other ``source.yaml`` defaults, staged content under
    ``MIN_STAGED_BYTES`` or not ending in a newline, another file now (device, inode, first or last staged bytes), or
    ``last_line`` (the last line of the file the warehouse holds a row of) past the staged content's lines: a whole
    read of a file written meanwhile reads past the size it found, which the manifest records, and those lines would
    be staged again (a break test). Raises nothing: an ``OSError`` gives None (the whole staging reports it)."""
    if not may_append(log, entry):
        return None
    try:
        with open(log.path, "rb", buffering=0) as handle:
            status = os.fstat(handle.fileno())
            if (status.st_dev, status.st_ino) != (log.device, log.inode) or status.st_size <= entry.size_bytes:
                return None
            head = os.pread(handle.fileno(), entry.head_bytes, 0)
            staged_tail = os.pread(handle.fileno(), HEAD_BYTES, entry.size_bytes - HEAD_BYTES)
            if (wide_encoding(read_head(log.path)) or generations.head_sha(head) != entry.head_sha
                    or generations.head_sha(staged_tail) != entry.tail_sha or not staged_tail.endswith(b"\n")):
                return None
            part = folder / "appended.jsonl"
            lines_appended = _copy(handle.fileno(), entry.size_bytes, status.st_size, part)
            end = status.st_size
            lines_before = entry.lines_staged if entry.lines_staged is not None else \
                _count_newlines(handle.fileno(), entry.size_bytes)
            if last_line > lines_before:
                return None
            tail = os.pread(handle.fileno(), HEAD_BYTES, end - HEAD_BYTES)
    except OSError:
        return None
    copy = LogFile(path=part, relative=log.relative, defaults=log.defaults, device=log.device, inode=log.inode,
                   size_bytes=end - entry.size_bytes, mtime_ns=log.mtime_ns, local=False,
                   defaults_sha=log.defaults_sha)
    return Append(log, copy, lines_before, end, generations.head_sha(tail), lines_before + lines_appended)


def _copy(fd: int, start: int, size: int, target: Path) -> int:
    """Copy the bytes ``[start, size)`` of the open file ``fd`` into ``target``; returns the newlines copied. Raises
    ``OSError`` when the file ends before ``size`` (truncated meanwhile: then it is staged whole)."""
    newlines = 0
    with open(target, "wb") as out:
        at = start
        while at < size:
            block = os.pread(fd, min(COPY_BLOCK, size - at), at)
            if not block:
                raise OSError(f"the file ended at byte {at} of {size} while it was copied")
            out.write(block)
            newlines += block.count(b"\n")
            at += len(block)
    return newlines


def _count_newlines(fd: int, size: int) -> int:
    """The newlines in the first ``size`` bytes of the open file ``fd`` (memory speed: about a second per GB). Of the
    descriptor whose identity and bytes were checked, not by name as ``stage.count_lines`` reads: a log rotated
    meanwhile would have another file's lines counted."""
    count = 0
    at = 0
    while at < size:
        block = os.pread(fd, min(COPY_BLOCK, size - at), at)
        if not block:
            break
        count += block.count(b"\n")
        at += len(block)
    return count

