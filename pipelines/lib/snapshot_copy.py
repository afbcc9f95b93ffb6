"""Publish a byte-for-byte copy of a DuckDB file for readers, rewriting only the blocks that changed.

A run publishes ``<warehouse>.snapshot.duckdb`` for readers (``warehouse.publish_snapshot``). Copying the whole
file each night costs what the history weighs (about 1 s per 570 MB here; at 30 days of 5M requests, some 14 GB
a night), though a new day changes a few percent of the file's blocks: DuckDB writes a checkpoint's new data to
free blocks and leaves every unchanged block where it was (30 days of 200,000 requests: 12 of 2,103 blocks
changed and 81 were added by the next day's run, ``bench/README.md``).

So the copy published before the current one is kept as a spare (``<target>.spare``, one more file of the
snapshot's size on disk) and brought up to date in place, block by block: a DuckDB file is three 4 KiB headers
followed by blocks of ``block_size`` bytes (``pragma database_size``; 256 KiB by default), each opening with an
8-byte checksum of its contents (DuckDB's storage format, ``BlockManager``; blocks are never written
without it). A block whose checksum equals the spare's at the same offset is left alone; every other block,
the headers and the file's length are copied. The spare is renamed to ``<target>.partial`` while it is written,
flushed to disk, and then renamed over the target, so readers that open the target see the old file or the new
one, never a mix; a crash leaves no spare, and the next publish copies the whole file.

The spare is reused only when no process has it open: a DuckDB reader holds a shared lock on the file it
reads (a reader who opened the snapshot before the last publish still reads the spare's inode), and an open file
description lock (Linux ``F_OFD_SETLK``; it conflicts with a lock of this very process too) that cannot be
taken sends the publish to the whole copy, leaving that reader's file untouched.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

HEADER_BYTES = 3 * 4096  # DuckDB's main header and its two database headers, before the first block
CHECKSUM_BYTES = 8  # the checksum each block opens with


def publish(source: Path, target: Path, block_size: int, source_fd: int | None = None) -> dict[str, object]:
    """Make ``target`` a byte-for-byte copy of the DuckDB file ``source`` (checkpointed, not being written) and
    keep the copy it replaces as the next publish's spare.

    ``block_size``: the file's block allocation size in bytes (``pragma database_size``'s ``block_size``).
    ``source_fd``: a descriptor of ``source`` open for reading that the caller keeps open; give it when this
    process holds ``source`` open in DuckDB: DuckDB's lock is a POSIX record lock, which the system drops when the
    process closes *any* descriptor of the file, so opening and closing ``source`` here would let another process
    open and write the warehouse while this one still works on it (a break test: a second run started while the
    first waited on the webhook wrote beside it). Without it ``source`` is opened and closed here.
    Returns ``{"bytes": the copy's size, "bytes_written": bytes written to make it, "spare_reused": bool}``.
    Raises ``OSError`` when the folder cannot be written.
    """
    if source_fd is None:
        src = os.open(source, os.O_RDONLY)
        try:
            return publish(source, target, block_size, src)
        finally:
            os.close(src)
    spare, partial = _beside(target, ".spare"), _beside(target, ".partial")
    size = os.fstat(source_fd).st_size
    try:
        written = _update_spare(source_fd, target, spare, partial, size, block_size)
        reused = written is not None
        if not reused:
            partial.unlink(missing_ok=True)
            out = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                written = _copy_range(source_fd, out, 0, size)
            finally:
                os.close(out)
    except OSError as exc:  # a full disk: the part written goes (a break test: it kept the disk full until the next
        # run), and the error names what was being written ("No space left on device" named nothing)
        partial.unlink(missing_ok=True)
        raise OSError(exc.errno, f"{exc.strerror or exc} while publishing the snapshot", str(target)) from exc
    spare.unlink(missing_ok=True)  # a spare left in use by a reader: its inode lives on while the reader needs it
    if target.exists():
        try:
            os.link(target, spare)  # the copy being replaced is the next publish's spare
        except OSError:  # a file system without hard links (some network shares): no spare, the next copy is whole
            pass
    os.replace(partial, target)
    return {"bytes": size, "bytes_written": written, "spare_reused": reused}


def _update_spare(src: int, target: Path, spare: Path, partial: Path, size: int, block_size: int) -> int | None:
    """Bring ``spare`` up to date with the file open as ``src`` as ``partial``; returns the bytes written, or None
    (nothing moved) when the spare is missing, is the target itself (a publish stopped between its two renames),
    does not have the block layout, or is open in a process."""
    if not spare.exists() or (target.exists() and os.path.samefile(spare, target)):
        return None
    if (size - HEADER_BYTES) % block_size or (spare.stat().st_size - HEADER_BYTES) % block_size:
        return None
    out = os.open(spare, os.O_RDWR)
    try:
        if not _lock(out):
            return None
        os.replace(spare, partial)  # while it is written it is no spare: a crash leaves the next publish a whole copy
        _sync_folder(partial.parent)
        written = _copy_range(src, out, 0, HEADER_BYTES)
        blocks, old_blocks = (size - HEADER_BYTES) // block_size, (os.fstat(out).st_size - HEADER_BYTES) // block_size
        for block in range(blocks):
            offset = HEADER_BYTES + block * block_size
            if block < old_blocks and os.pread(src, CHECKSUM_BYTES, offset) == os.pread(out, CHECKSUM_BYTES, offset):
                continue
            written += _copy_range(src, out, offset, block_size)
        os.ftruncate(out, size)
        os.fsync(out)  # on disk before readers are pointed at it, and before it serves as a spare again
        return written
    finally:
        os.close(out)  # releases the lock


def _lock(fd: int) -> bool:
    """Take an exclusive lock on the whole file without waiting; False when a reader (any process) holds one."""
    try:
        if hasattr(fcntl, "F_OFD_SETLK"):
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        else:  # no open file description locks (macOS): a process-wide lock sees other processes' readers
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _copy_range(src: int, dst: int, offset: int, length: int) -> int:
    """Copy ``length`` bytes at ``offset`` of ``src`` to the same offset of ``dst`` (fewer at the file's end);
    returns the bytes copied."""
    done, in_kernel = 0, getattr(os, "copy_file_range", None)
    while done < length:
        try:
            step = in_kernel(src, dst, length - done, offset + done, offset + done)
        except (OSError, TypeError):  # a system without it (macOS: None), or a file system that refuses: read and write
            chunk = os.pread(src, length - done, offset + done)
            step = os.pwrite(dst, chunk, offset + done) if chunk else 0
        if step == 0:
            break
        done += step
    return done


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename) to disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _beside(path: Path, suffix: str) -> Path:
    """``path`` with ``suffix`` added to its name."""
    return path.with_name(path.name + suffix)
