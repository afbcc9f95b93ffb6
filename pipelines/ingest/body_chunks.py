"""Fingerprints of a chunk's logged request bodies: the per-record work of the body path, over cores.

``fingerprint_lines`` takes the lines of one chunk that carry a request (file order) and returns,
per line, its fingerprint row (or none) and the line with its body cut for the usage normaliser
(``fingerprints.without_request_body``). What it saves over calling ``fingerprints``' functions one by
one, with identical results (``tests/lib/test_body_chunks.py`` compares them on mutated bodies):

* one walk of each line gives the record and the spans of the request's own keys
  (``fingerprints.parse_envelope``), so cutting the body needs no second parse;
* the tools list's canonical JSON and its hash, and the system prompt's hash, are remembered by the
  text they come from (an app sends the same tools and system prompt request after request); a system
  prompt as long as its predecessor's, within the prefix the two texts share, is that one, and its hash
  is taken without looking it up (hashing a 16 KB prompt for the lookup cost 5% of a body);
* the opening hashes of the boundaries a request shares with its predecessor (the common prefix
  the divergence measures anyway) are that predecessor's, and the running hash goes on from there.

Why a process pool: this is Python per record (json's scanner, rendering, hashing, the divergence's
search), bound by one core under the GIL, while the machine has more. A chunk of at least
``POOL_MIN_LINES`` is cut into one contiguous piece per core, each for a worker process (``spawn``: the
parent holds DuckDB's threads, which ``fork`` would copy mid-flight), while this process reads the next
chunk (``submit_lines``; ``Pending.result`` collects them in file order). Each piece measures divergences
against the previous request of the same (tenant, app) within it; the first request of each app in a
piece is measured here, against the last text of that app in the pieces (and chunks) before it, so the
result is what one pass in file order gives. The texts cross the process boundary in memory only; none
is stored.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import multiprocessing
import os
import sys
from collections.abc import Iterable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import shared_memory

import pyarrow as pa

from pipelines.ingest import fingerprints as fp
from pipelines.ingest.readers import RangeUnreadable, lines_of_range
from pipelines.lib import parent_watch

POOL_MIN_LINES = 256  # a chunk with fewer request lines is done in this process (a piece costs a pickling round trip)
MEMO_ENTRIES = 512  # distinct tools lists / system prompts remembered per process before starting afresh


@dataclass
class Piece:
    """What ``fingerprint_piece`` found in a run of consecutive lines.

    ``rows``: one tuple per fingerprinted line, ``(line index, family, system_sha, tools_sha,
    opening_hashes, rendered_chars, divergence_offset_chars, divergence_span)``, the last two None for
    an app's first request in the piece (listed in ``firsts``: app -> (row number, rendered text));
    ``cut``: per line, the line with its body cut, or None to keep it whole; ``lasts``: app -> the
    rendered text of its last request in the piece.
    """

    rows: list[tuple] = field(default_factory=list)
    cut: list[str | None] = field(default_factory=list)
    firsts: dict[tuple, tuple[int, str]] = field(default_factory=dict)
    lasts: dict[tuple, str] = field(default_factory=dict)


_tools_memo: dict[str, tuple[str, str]] = {}  # text of the request's tools value -> (canonical JSON, its hash)
_system_memo: dict[str, str] = {}  # system prompt -> its hash


def _remembered(memo: dict, key, compute):
    found = memo.get(key)
    if found is None:
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        found = memo[key] = compute()
    return found


def _json_and_sha(tools) -> tuple[str, str]:
    text = fp.canonical_json(tools)
    return text, fp.short_sha(text)


def _request_member_span(line: str, key: str) -> tuple[int, int] | None:
    """Where the text of ``line``'s ``request.<key>`` lies (``fingerprints.member_span`` twice, for a line
    json.loads has read); None when either is absent or given twice."""
    try:
        request = fp.member_span(line, 0, "request")
        return None if request is None else fp.member_span(line, request[0], key)
    except ValueError:  # a member name written with an escape: the walk decodes it
        parsed = fp.parse_envelope(line)
        return None if parsed is None else parsed[2].get(key)


def _render(request: dict, request_spans: dict | None, line: str) -> tuple[str, str, str | None, str]:
    """``fingerprints.render`` of ``request`` and the tools' hash, the tools' JSON remembered by its source text.
    ``request_spans``: the spans of the request's members in ``line`` (``parse_envelope``'s), or None to find
    the tools' alone."""
    source = "tools" if request.get("tools") else "toolConfig"  # the key render's tools come from
    has_tools = request.get(source) is not None
    span = (request_spans.get(source) if request_spans is not None
            else _request_member_span(line, source) if has_tools else None)
    if span is None:
        system, tools_json, text = fp.render(request)
        return system, tools_json, fp.short_sha(tools_json) if tools_json else None, text
    key = source + line[span[0]:span[1]]  # the same text gives the same tools, so the same JSON
    remembered: list = []

    def canonical(tools) -> str:
        remembered.append(_remembered(_tools_memo, key, lambda: _json_and_sha(tools)))
        return remembered[0][0]

    system, tools_json, text = fp.render(request, canonical)
    return system, tools_json, remembered[0][1] if remembered else None, text


def fingerprint_piece(lines: Iterable[str] | pa.StringArray, tenant, app, cut: list[bool] | None = None) -> Piece:
    """Fingerprints of consecutive request lines (see ``Piece``; ``lines`` is read once, in order, so a reader may
    give them one at a time); ``tenant``/``app``: the file's defaults;
    ``cut``: per line, whether to cut its body for the usage normaliser (None: every line's; a line the fast
    lane accepted is only fingerprinted). A line too deeply nested to read or render within
    ``RECURSION_HEADROOM`` is kept whole and not fingerprinted."""
    if isinstance(lines, pa.Array):
        lines = lines.to_pylist()
    out = Piece()
    # app -> (last text, its opening hashes and states, its system prompt's length and hash)
    chain: dict[tuple, tuple[str, tuple[list[str], list], int, str | None]] = {}
    with _recursion_headroom():
        for index, line in enumerate(lines):
            try:
                found = _read_and_render(line, cut is None or cut[index], tenant, app)
            except (ValueError, RecursionError):  # not JSON, or nested past the headroom: quarantined by the SQL
                found = None  # normalisation, or its usage read by the lane as it is
            if found is None:
                out.cut.append(None)  # kept whole: the normaliser reads it, or quarantines it
                continue
            app_key, cut_line, (system, tools_json, tools_sha, text) = found
            out.cut.append(cut_line)
            previous = chain.get(app_key)
            system_sha = None
            if previous is None:
                offset = span = None
                openings = fp.opening_states(text)
                out.firsts[app_key] = (len(out.rows), text)
            else:
                common = fp.common_prefix_chars(previous[0], text)
                offset, span = fp.divergence(previous[0], text, common)
                shared = sum(1 for boundary in fp.OPENING_BOUNDARIES_CHARS if boundary <= common)
                openings = fp.opening_states(text, shared, previous[1])
                if previous[2] == len(system) and common >= len(system):  # both texts open with this system prompt
                    system_sha = previous[3]
            if system and system_sha is None:
                system_sha = _remembered(_system_memo, system, lambda: fp.short_sha(system))
            chain[app_key] = (text, openings, len(system), system_sha)
            hashes = openings[0]
            out.rows.append((index, fp.family_of(hashes, text), system_sha, tools_sha, hashes, len(text), offset, span))
    out.lasts = {app_key: text for app_key, (text, *_) in chain.items()}
    return out


def _read_and_render(line: str, wanted: bool, tenant, app):
    """``(app key, the line with its body cut or None, _render's four)`` of one request line, or None when it names no
    series (not an envelope with a request and a response, or a tenant or app that is an object or a list). ``wanted``:
    cut the body (the walk gives the spans), else only read it. Raises ``ValueError`` (not JSON) or
    ``RecursionError``."""
    if wanted:  # the walk: its spans cut the body
        parsed = fp.parse_envelope(line)
        record, spans, request_spans = parsed if parsed is not None else (json.loads(line), {}, {})
    else:  # read in C (orjson where it gives json's value); the tools' text, the one span wanted, found if any
        record, spans, request_spans = fp.loads(line), None, None
    request = record.get("request") if isinstance(record, dict) else None
    app_key = (record.get("tenant", tenant), record.get("app", app)) if isinstance(record, dict) else None
    if not isinstance(request, dict) or not isinstance(record.get("response"), dict) \
            or not all(isinstance(v, (str, int, float, bool, type(None))) for v in app_key):
        return None
    rendered = _render(request, request_spans, line)
    return app_key, fp.without_request_body(line, record, spans, request_spans) if wanted else None, rendered


# Frames above the caller's that reading and rendering one body may take. json.loads, the rendering's recursion and
# json.dumps of the tools stop at Python's recursion limit, which counts the frames already on the stack: without a
# headroom of its own, a line nested about 900 levels deep was fingerprinted in a worker and refused in the parent,
# so its rows depended on where in a chunk it fell. orjson reads up to 1,024 levels, and rendering takes up to two
# frames a level (a list's text is joined from a generator).
RECURSION_HEADROOM = 2_600


@contextlib.contextmanager
def _recursion_headroom():
    """Python's recursion limit set to this frame's depth + ``RECURSION_HEADROOM`` while fingerprinting, then
    restored."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + RECURSION_HEADROOM)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


_pool: Executor | None = None
_pool_failed = False  # a pool that broke once (no worker could start, or one died) is not tried again in this process


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _executor() -> Executor:
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=_cores(), mp_context=multiprocessing.get_context("spawn"),
                                    initializer=parent_watch.exit_with_parent, initargs=(os.getpid(),))
        # also at exit: a process that ends by os._exit after its exit handlers (cachemeter run) never reaches
        # the thread shutdown that stops a pool, and multiprocessing's own exit handler would then wait forever
        # for the idle workers (registered later, this handler runs before that one)
        atexit.register(shutdown)
    return _pool


def shutdown() -> None:
    """Stop the worker processes, if any were started, and free the kept segments (idempotent; the next large chunk
    starts a pool again)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None
    while _free_segments:
        _unlink(_free_segments.pop())


SEGMENT_MIN_BYTES = 24 * 1024 * 1024  # a segment holds a piece of a 32 MB chunk (reused for the pieces after it)
KEPT_SEGMENTS = 8  # free segments kept mapped for the next pieces (two chunks in flight over four cores)
MAPPED_IN_WORKER = 8  # segments a worker keeps mapped (the parent reuses a few, so this many covers them)
_free_segments: list[shared_memory.SharedMemory] = []  # in the parent: segments whose pieces are done
_mapped: dict[str, shared_memory.SharedMemory] = {}  # in a worker: segments it has mapped, by name (oldest first)


SHM_FOLDER = "/dev/shm"  # where Linux keeps the segments (a tmpfs: 64 MB in a default Docker container)


def _segment(size: int) -> shared_memory.SharedMemory:
    """A free segment of at least ``size`` bytes: a kept one, or a new one. Reused because a new segment costs a page
    fault per 4 KB written in the parent and read in the worker: with every piece in a fresh segment, a run of
    500,000 logged bodies spent 17 s more system time (bench/README.md, "orjson for the lane's bodies, and reading
    beside the workers"). Raises ``OSError`` (ENOSPC) when ``SHM_FOLDER`` has less than ``size`` bytes free: a segment
    is sized without taking its room, and writing past a full tmpfs kills the process (SIGBUS), so the caller
    sends the piece through the pipe instead."""
    if os.path.isdir(SHM_FOLDER):
        folder = os.statvfs(SHM_FOLDER)
        if folder.f_bavail * folder.f_frsize < size:
            raise OSError(errno.ENOSPC, f"{SHM_FOLDER} has less than {size} bytes free for a piece")
    for index, segment in enumerate(_free_segments):
        if segment.size >= size:
            return _free_segments.pop(index)
    return shared_memory.SharedMemory(create=True, size=max(size, SEGMENT_MIN_BYTES))


def _unlink(segment: shared_memory.SharedMemory) -> None:
    segment.close()
    segment.unlink()


class _Shared:
    """A piece's lines in shared memory, for a worker to read in place.

    Pickled through the pool's pipe, a piece was copied four times (pickled, written, read, unpickled): about a
    tenth of a 500,000-body run's CPU (bench/README.md, "The divergence compiled"). Here the parent copies the
    Arrow array's offsets and characters once into a shared segment (``_segment``: one kept from earlier pieces
    where one is free) and sends its name; the worker builds the array over the segment (kept mapped) and makes
    its strings from it. Once the piece's result is back the parent keeps the segment for the next piece
    (``release``), and unlinks it at ``shutdown``; the pool's resource tracker removes it if the parent dies first.
    """

    def __init__(self, lines: pa.StringArray):
        own = pa.concat_arrays([lines])  # offsets from 0 over characters of its own: a slice's are its parent's
        offsets, data = own.buffers()[1], own.buffers()[2]
        self.length, self.offsets_size, self.data_size = len(own), offsets.size, data.size if data else 0
        self.memory = _segment(max(self.offsets_size + self.data_size, 1))
        self.memory.buf[:self.offsets_size] = memoryview(offsets).cast("B")
        if self.data_size:
            self.memory.buf[self.offsets_size:self.offsets_size + self.data_size] = memoryview(data).cast("B")
        self.name = self.memory.name

    def __getstate__(self) -> dict:  # what crosses to the worker: the segment's name and the sizes
        return {"name": self.name, "length": self.length, "offsets_size": self.offsets_size,
                "data_size": self.data_size}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, memory=None)

    def lines(self) -> list[str]:
        """In the worker: the piece's lines as Python strings, read from the segment (kept mapped for the next piece
        the parent writes into it; the oldest of more than ``MAPPED_IN_WORKER`` is closed)."""
        memory = _mapped.pop(self.name, None) or shared_memory.SharedMemory(name=self.name)
        _mapped[self.name] = memory
        while len(_mapped) > MAPPED_IN_WORKER:
            _mapped.pop(next(iter(_mapped))).close()
        view = memory.buf
        offsets = pa.py_buffer(view[:self.offsets_size])
        data = pa.py_buffer(view[self.offsets_size:self.offsets_size + self.data_size])
        array = pa.StringArray.from_buffers(self.length, offsets, data)
        out = array.to_pylist()
        del array, offsets, data, view  # no view may outlive a mapping that is closed later
        return out

    def release(self) -> None:
        """In the parent, once no worker reads it: keep the segment for the next piece, or unlink it when
        ``KEPT_SEGMENTS`` are kept already (idempotent)."""
        if self.memory is not None:
            if len(_free_segments) < KEPT_SEGMENTS:
                _free_segments.append(self.memory)
            else:
                _unlink(self.memory)
            self.memory = None


def _shared_piece(shared: _Shared, tenant, app, cut: list[bool] | None) -> Piece:
    """``fingerprint_piece`` of lines handed over in shared memory (run in a worker)."""
    return fingerprint_piece(shared.lines(), tenant, app, cut)


def _handed_over(lines: list[str] | pa.StringArray):
    """What a worker gets for a piece: a list as it is; an Arrow array without nulls in shared memory."""
    if isinstance(lines, pa.Array) and lines.type == pa.string() and lines.null_count == 0:
        try:
            return _Shared(lines)
        except OSError:  # no room for a segment (e.g. a small /dev/shm): through the pipe, as a copy
            pass
    return pa.concat_arrays([lines]) if isinstance(lines, pa.Array) else lines  # (a slice pickles its parent's buffers)


class Pending:
    """A chunk's fingerprints under way (``submit_lines``): its pieces in the workers, or done here.

    ``result`` waits for them and stitches them in file order; the chunk's lines are kept until then, so the pieces
    can be done here again if a worker died.
    """

    def __init__(self, lines, tenant, app, cut: list[bool] | None):
        self.lines, self.tenant, self.app, self.cut = lines, tenant, app, cut
        self.starts: list[int] = [0]
        self.size = max(len(lines), 1)
        self.pieces: list = []  # a Piece, or the Future of one
        self.handed: list = []  # what went to the workers (``_Shared`` segments to free)

    def _redo(self) -> list[Piece]:
        return [fingerprint_piece(self.lines[s:s + self.size], self.tenant, self.app,
                                  self.cut and self.cut[s:s + self.size]) for s in self.starts]

    def result(self, last_text_by_app: dict) -> Piece:
        """The chunk's ``Piece`` (``fingerprint_lines``'): divergences of each piece's first request of an app measured
        against ``last_text_by_app`` (app -> rendered text of its previous request, updated here). Call in file
        order."""
        global _pool, _pool_failed
        try:
            pieces = [p.result() if isinstance(p, Future) else p for p in self.pieces]
        except (BrokenProcessPool, OSError):  # a worker died (e.g. killed for memory): do the pieces here, and the
            _pool, _pool_failed = None, True  # later chunks too (starting a pool costs each worker an import)
            pieces = self._redo()
        finally:
            self.release()
        return _stitched(self.starts, pieces, last_text_by_app)

    def release(self) -> None:
        """Free the pieces' shared segments (idempotent; ``result`` does it): pieces not started are cancelled, and
        those running waited for, since a freed segment is written again for a later piece."""
        for future in self.pieces:
            if isinstance(future, Future) and not future.cancel():
                with contextlib.suppress(Exception):  # its result is not wanted: a failed piece is redone or dropped
                    future.result()
        for piece in self.handed:
            if isinstance(piece, _Shared):
                piece.release()
        self.handed = []


def _stitched(starts: list[int], pieces: list[Piece], last_text_by_app: dict) -> Piece:
    """One ``Piece`` of consecutive pieces (the first line of each at ``starts``), in file order: each piece's first
    request of an app measured against ``last_text_by_app`` (app -> rendered text of its previous request, updated
    here)."""
    out = Piece()
    for start, piece in zip(starts, pieces):
        rows = [(start + row[0], *row[1:]) for row in piece.rows]
        for app_key, (row_no, text) in piece.firsts.items():
            previous = last_text_by_app.get(app_key)
            if previous is not None:
                rows[row_no] = (*rows[row_no][:6], *fp.divergence(previous, text))
        last_text_by_app.update(piece.lasts)
        out.rows += rows
        out.cut += piece.cut
    return out


def _range_piece(path: str, start: int, end: int, first_line: int, numbers, tenant, app) -> Piece | None:
    """``fingerprint_piece`` of the lines ``numbers`` of a byte range of a JSONL text, read here as they are measured
    (``readers.lines_of_range``; None when it cannot give them all), as lines the fast lane accepted: only
    fingerprinted."""
    try:
        return fingerprint_piece(lines_of_range(path, start, end, first_line, numbers), tenant, app,
                                 [False] * len(numbers))
    except RangeUnreadable:
        return None


class RangePending:
    """The fingerprints of a byte range's request lines under way (``submit_range``): one piece, in a worker or done
    here. ``result`` gives its ``Piece`` (rows numbered by position in the range's ``numbers``), or None when the range
    must be read the other way (``readers.lines_of_range``); a piece whose worker died is done here again."""

    def __init__(self, args: tuple):
        self.args = args
        self.piece: Piece | Future | None = None

    def result(self, last_text_by_app: dict) -> Piece | None:
        """As ``Pending.result``; call in file order. Raises ``OSError`` when the file cannot be read."""
        global _pool, _pool_failed
        piece = self.piece
        if isinstance(piece, Future):
            try:
                piece = piece.result()
            except BrokenProcessPool:  # a worker died, as in Pending.result: here, and the later ranges too
                _pool, _pool_failed = None, True
                piece = _range_piece(*self.args)
            except OSError:  # read here again: a file that cannot be read raises its error here
                piece = _range_piece(*self.args)
        self.piece = None
        return None if piece is None else _stitched([0], [piece], last_text_by_app)

    def release(self) -> None:
        """Cancel the piece if it has not started (idempotent)."""
        if isinstance(self.piece, Future):
            self.piece.cancel()
        self.piece = None


def submit_range(path, start: int, end: int, first_line: int, numbers, tenant, app) -> RangePending:
    """Start fingerprinting the lines ``numbers`` (line numbers, ascending) of the byte range ``[start, end)`` of a plain
    JSONL text (the file, or a gzip file's decompressed copy) whose first line is ``first_line``, in a worker that
    reads them itself; ``RangePending.result`` gives them. For lines the fast lane accepted (only fingerprinted, never
    cut): the parent no longer reads, splits and copies them to the worker, which cost it about as much CPU as the
    fingerprints themselves (bench/README.md, "Workers read the lines they fingerprint"). One core, or a pool that
    failed, or fewer than ``POOL_MIN_LINES`` lines: done here before this returns."""
    global _pool, _pool_failed
    pending = RangePending((str(path), start, end, first_line, numbers, tenant, app))
    if _cores() < 2 or len(numbers) < POOL_MIN_LINES or _pool_failed:
        pending.piece = _range_piece(*pending.args)
        return pending
    try:
        pending.piece = _executor().submit(_range_piece, *pending.args)
    except (BrokenProcessPool, OSError):
        _pool, _pool_failed = None, True
        pending.piece = _range_piece(*pending.args)
    return pending


def submit_lines(lines: list[str] | pa.StringArray, tenant, app, cut: list[bool] | None = None) -> Pending:
    """Start ``fingerprint_piece`` of a chunk's request lines (file order); ``Pending.result`` gives them.

    A chunk of at least ``POOL_MIN_LINES`` goes to the worker pool, one contiguous piece per core, and this returns at
    once: the caller reads the next chunk while the workers measure this one (with this process fingerprinting a piece
    itself, one core stood idle while it read: bench/README.md, "orjson for the lane's bodies, and reading beside the
    workers"). A smaller chunk, one core, or a pool that failed: done here before this returns. ``cut``: as
    ``fingerprint_piece``'s. Lines given as an Arrow array reach a worker in shared memory (``_Shared``) and become
    Python strings there: pickling the strings cost the parent 3.9 s of 500,000 logged bodies."""
    global _pool, _pool_failed
    pending = Pending(lines, tenant, app, cut)
    cores = _cores()
    if cores < 2 or len(lines) < POOL_MIN_LINES or _pool_failed:
        pending.pieces = [fingerprint_piece(lines, tenant, app, cut)]
        return pending
    pending.size = size = -(-len(lines) // cores)
    pending.starts = list(range(0, len(lines), size))
    try:
        for s in pending.starts:
            pending.handed.append(_handed_over(lines[s:s + size]))
            work = _shared_piece if isinstance(pending.handed[-1], _Shared) else fingerprint_piece
            pending.pieces.append(_executor().submit(work, pending.handed[-1], tenant, app, cut and cut[s:s + size]))
    except (BrokenProcessPool, OSError):  # no worker could start: the pieces here, and the later chunks too
        _pool, _pool_failed = None, True
        pending.release()  # (cancels what was submitted)
        pending.pieces = pending._redo()
    return pending


def fingerprint_lines(lines: list[str] | pa.StringArray, tenant, app, last_text_by_app: dict,
                      cut: list[bool] | None = None) -> Piece:
    """``fingerprint_piece`` of a chunk's request lines in file order, divergences measured against
    ``last_text_by_app`` (app -> rendered text of its previous request, updated here) where a piece has
    no earlier request of the app: ``submit_lines`` and its ``result`` at once."""
    return submit_lines(lines, tenant, app, cut).result(last_text_by_app)
