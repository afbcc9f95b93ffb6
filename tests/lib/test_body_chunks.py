"""The body path over chunks (ingest/body_chunks.py) against the plain per-record definitions."""

import hashlib
import sys
import json
import random

import pyarrow as pa
import pytest

from pipelines.ingest import body_chunks, fingerprints

WORDS = "policy refund order tone always never escalate reply cite source tool schema".split()


def _prose(rng: random.Random, chars: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(chars // 6 + 1))[:chars]


def _lines(seed: int, count: int) -> list[str]:
    """Envelopes of a few apps whose system prompts and tools repeat and mutate (stamps, edits, cuts)."""
    rng = random.Random(seed)
    systems = [_prose(rng, chars) for chars in (300, 1500, 5000, 12000)]
    tools = [[{"name": f"t{i}", "parameters": {"type": "object", "b": 1, "a": [i, "é"]}}] for i in range(3)]
    out = []
    for n in range(count):
        app = rng.randrange(4)
        system = systems[app]
        change = rng.randrange(6)
        if change == 1:  # a stamp written in at some depth
            at = rng.randrange(len(system))
            system = system[:at] + f" Now: 2026-11-{rng.randrange(1, 29):02d}T10:{rng.randrange(60):02d}:00Z." + system[at:]
        elif change == 2:  # a word edited
            at = rng.randrange(len(system))
            system = system[:at] + rng.choice(WORDS) + system[at + 5:]
        elif change == 5 and len(system) > 1024:  # a character changed just before or at an opening boundary
            at = rng.choice((255, 256, 511, 512, 1023, 1024))
            system = system[:at] + "#" + system[at + 1:]
        elif change == 3:  # cut short: one text continues the other
            system = system[:rng.randrange(1, len(system))]
        user = "" if change == 4 else _prose(rng, rng.randrange(0, 600))
        shape = rng.randrange(4)
        if shape == 0:
            request = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                       "tools": tools[app % 3]}
            if rng.random() < 0.4:
                request["prompt_cache_key"] = f"key-{app}"
        elif shape == 1:
            request = {"system": [{"type": "text", "text": system}], "tools": tools[(app + 1) % 3],
                       "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}]}
        elif shape == 2:
            request = {"system": [{"text": system}], "toolConfig": {"tools": tools[app % 2]},
                       "messages": [{"role": "user", "content": [{"text": user}]}]}
        else:
            request = {"instructions": system, "input": user}
        record = {"ts": f"2026-11-01T00:00:{n % 60:02d}Z", "request": request, "response": {"usage": {"prompt_tokens": 5}}}
        if app != 3:  # app 3 takes the file's defaults
            record.update(tenant="t", app=f"a{app}")
        line = json.dumps(record, ensure_ascii=rng.random() < 0.5)
        odd = rng.randrange(40)
        if odd == 0:
            line = line[:-5]  # malformed: no fingerprint, kept whole
        elif odd == 1:
            line = line.replace('"response": {', '"response": [{', 1).replace("}}}", "}}]}")  # no response object
        elif odd == 2:
            line = line[:-1] + ', "request": {"messages": []}}'  # the request given twice: the last one counts
        elif odd == 3:
            line = line.replace('"input": "', '"input": "\\"error\\" ', 1)
        elif odd == 4:  # the tools' name written with an escape: found by the walk, in the lane too
            line = line.replace('"tools": ', '"\\u0074ools": ', 1)
        elif odd == 5:  # the tools given twice: the last one counts, and neither text is remembered
            line = line.replace('"tools": ', '"tools": [{"name": "first"}], "tools": ', 1)
        out.append(line)
    return out


def _expected(lines: list[str], tenant, app) -> tuple[list[tuple], list]:
    """One record at a time with the plain definitions: json.loads, render, a hash per prefix, divergence."""
    def sha(text):
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    previous, rows, cut = {}, [], []
    for index, line in enumerate(lines):
        parsed = fingerprints.parse_object(line)
        try:
            record, spans = parsed if parsed is not None else (json.loads(line), {})
        except ValueError:
            cut.append(None)
            continue
        if not isinstance(record.get("request"), dict) or not isinstance(record.get("response"), dict):
            cut.append(None)
            continue
        cut.append(fingerprints.without_request_body(line, record, spans))  # parses the request again for its key
        system, tools_json, text = fingerprints.render(record["request"])
        openings = [sha(text[:b]) for b in fingerprints.OPENING_BOUNDARIES_CHARS if len(text) >= b]
        key = (record.get("tenant", tenant), record.get("app", app))
        divergence = fingerprints.divergence(previous[key], text) if key in previous else (None, None)
        previous[key] = text
        rows.append((index, "fp:" + (openings[1] if len(openings) > 1 else sha(text[:512])),
                     sha(system) if system else None, sha(tools_json) if tools_json else None,
                     openings, len(text), *divergence))
    return rows, cut


@pytest.mark.parametrize("lane", [False, True])  # bodies cut for the normaliser (the walk); lane lines (json.loads)
@pytest.mark.parametrize("as_arrow", [False, True])  # the lines as Python strings; as an Arrow array (stage.py's)
@pytest.mark.parametrize("pool_from", [10**9, 1])  # in this process only; pieces over the worker pool
def test_chunks_give_what_one_record_at_a_time_gives_across_chunk_and_piece_boundaries(monkeypatch, pool_from, as_arrow,
                                                                                      lane):
    monkeypatch.setattr(body_chunks, "POOL_MIN_LINES", pool_from)
    monkeypatch.setattr(body_chunks, "_cores", lambda: 3)  # three pieces a chunk, also on a one-core machine
    monkeypatch.setattr(body_chunks, "_tools_memo", {})
    made = _recording_segments(monkeypatch)
    lines = _lines(7, 240)
    expected_rows, expected_cut = _expected(lines, "dt", "da")
    last_text_by_app: dict = {}
    rows, cut = [], []
    for start in range(0, len(lines), 70):  # chunks of 70: an app's predecessor often sits in an earlier chunk
        chunk = lines[start:start + 70]
        found = body_chunks.fingerprint_lines(pa.array(chunk, pa.string()) if as_arrow else chunk, "dt", "da",
                                              last_text_by_app, [False] * len(chunk) if lane else None)
        rows += [(start + row[0], *row[1:]) for row in found.rows]
        cut += found.cut
    assert cut == ([None] * len(lines) if lane else expected_cut)
    assert rows == expected_rows
    # the mutations reach what they are meant to: long texts, shared openings, stamps, skipped lines, the odd
    # ways of writing the tools
    assert len(rows) < len(lines) and sum(c is not None for c in expected_cut) < len(rows)
    assert {r[7] for r in rows} >= {None, "identical"} and any("timestamp" in (r[7] or "") for r in rows)
    assert any(len(r[4]) >= 5 for r in rows) and any('"prompt_cache_key":"key-' in (c or "") for c in expected_cut)
    assert any('"\\u0074ools"' in line for line in lines) and any('"tools": [{"name": "first"}], "tools"' in line
                                                                    for line in lines)
    # Arrow lines over the pool go in shared segments, three (one a piece) reused for every chunk after the first
    assert len(made) == (3 if as_arrow and pool_from == 1 else 0)
    assert made <= _shared_segments() or not made  # kept for the next pieces until the pool stops,
    body_chunks.shutdown()
    assert not made & _shared_segments()  # then freed (other tests' segments, made meanwhile, aside)
    if not as_arrow and pool_from > 1:  # in this process: the tools' texts were remembered, the doubled ones not
        memo = body_chunks._tools_memo  # (a toolConfig holding the doubled key is one member, remembered whole)
        assert memo and not any(key.startswith("tools") and "first" in key for key in memo)


def _recording_segments(monkeypatch) -> set[str]:
    """The names of the shared segments this test's pieces are handed over in (filled as they are made)."""
    made: set[str] = set()
    real = body_chunks._Shared.__init__

    def init(self, lines):
        real(self, lines)
        made.add(self.name.lstrip("/"))

    monkeypatch.setattr(body_chunks._Shared, "__init__", init)
    return made


def _shared_segments() -> set[str]:
    import pathlib

    return {p.name for p in pathlib.Path("/dev/shm").glob("psm_*")} if pathlib.Path("/dev/shm").is_dir() else set()


def test_pieces_reach_the_workers_through_shared_memory_or_the_pipe_when_there_is_none(monkeypatch):
    """Arrow lines go to a worker in a shared segment; where none can be made (a full /dev/shm), through the
    pool's pipe; the rows are what one pass gives either way."""
    monkeypatch.setattr(body_chunks, "POOL_MIN_LINES", 1)
    monkeypatch.setattr(body_chunks, "_cores", lambda: 2)
    lines = _lines(5, 80)
    expected = _expected(lines, "dt", "da")[0]
    made = []
    real = body_chunks._handed_over

    def handed_over(piece):
        made.append(real(piece))
        return made[-1]

    monkeypatch.setattr(body_chunks, "_handed_over", handed_over)
    assert body_chunks.fingerprint_lines(pa.array(lines, pa.string()), "dt", "da", {}).rows == expected
    assert [(type(m).__name__, m.length) for m in made] == [("_Shared", 40)] * 2  # each half, in shared memory
    made.clear()
    body_chunks.shutdown()  # no segment kept from those pieces: the next must make its own

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(body_chunks.shared_memory, "SharedMemory", no_room)
    assert body_chunks.fingerprint_lines(pa.array(lines, pa.string()), "dt", "da", {}).rows == expected
    assert [type(m).__name__ for m in made] == ["StringArray"] * 2 and not body_chunks._pool_failed  # through the pipe


def test_a_shared_folder_without_room_for_a_piece_sends_it_through_the_pipe(monkeypatch):
    """A segment is sized without taking its room, and writing past a full tmpfs kills the process (SIGBUS): where
    ``/dev/shm`` has less free than a piece needs (a default Docker container has 64 MB), the piece goes through the
    pool's pipe, and the rows are what one pass gives."""
    import os

    if not os.path.isdir(body_chunks.SHM_FOLDER):
        pytest.skip("no /dev/shm here: the segments live elsewhere")
    monkeypatch.setattr(body_chunks, "POOL_MIN_LINES", 1)
    monkeypatch.setattr(body_chunks, "_cores", lambda: 2)
    body_chunks.shutdown()  # no segment kept from an earlier test
    full = os.statvfs_result((4096, 4096, 16384, 0, 0, 0, 0, 0, 0, 255))  # 64 MB, none of it free
    monkeypatch.setattr(body_chunks.os, "statvfs", lambda path: full)
    made = []
    real = body_chunks._handed_over
    monkeypatch.setattr(body_chunks, "_handed_over", lambda piece: made.append(real(piece)) or made[-1])
    lines = _lines(5, 80)
    expected = _expected(lines, "dt", "da")[0]
    assert body_chunks.fingerprint_lines(pa.array(lines, pa.string()), "dt", "da", {}).rows == expected
    assert [type(m).__name__ for m in made] == ["StringArray"] * 2 and not body_chunks._pool_failed


def test_a_pool_that_cannot_start_is_tried_once_and_the_chunks_are_done_here(monkeypatch):
    """No worker can start (e.g. a main module without the ``__name__ == "__main__"`` guard under spawn):
    the first chunk falls back to this process, later chunks do not try again (each try re-imports the
    main module in every worker), and the rows are what one pass gives."""
    from concurrent.futures.process import BrokenProcessPool

    tries = []

    def broken():
        tries.append(1)
        raise BrokenProcessPool("no worker could start")

    monkeypatch.setattr(body_chunks, "POOL_MIN_LINES", 1)
    monkeypatch.setattr(body_chunks, "_cores", lambda: 2)
    monkeypatch.setattr(body_chunks, "_executor", broken)
    monkeypatch.setattr(body_chunks, "_pool_failed", False, raising=False)
    lines = _lines(11, 120)
    last_text_by_app: dict = {}
    rows = []
    for start in range(0, len(lines), 40):
        found = body_chunks.fingerprint_lines(lines[start:start + 40], "dt", "da", last_text_by_app)
        rows += [(start + row[0], *row[1:]) for row in found.rows]
    assert tries == [1]
    assert rows == _expected(lines, "dt", "da")[0]


def _deep_envelope(n: int, where: str, depth: int, digits: bool = False) -> str:
    """An OpenAI envelope whose request nests ``depth`` levels in ``where`` (tools' parameters, or metadata), with a
    19-digit id when ``digits`` (so the line is read by json.loads, not orjson)."""
    nested = "[" * depth + "]" * depth
    request = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are helpful."},
                                                {"role": "user", "content": f"hello {n}"}]}
    if digits:
        request["user"] = "1234567890123456789"
    text = json.dumps({"tenant": "t", "app": "a", "request": request,
                       "response": {"id": f"r{n}", "usage": {"prompt_tokens": 100, "completion_tokens": 5}}})
    member = ('"tools": [{"type": "function", "function": {"name": "f", "parameters": ' + nested + "}}]"
              if where == "tools" else '"metadata": ' + nested)
    return text.replace('"request": {', '"request": {' + member + ", ", 1)


def _at_stack_depth(frames: int, work):
    return work() if frames == 0 else _at_stack_depth(frames - 1, work)


def test_a_deeply_nested_body_gets_the_same_fingerprint_in_any_process_at_any_stack_depth(monkeypatch):
    """Found by a break test: json.loads, the rendering and json.dumps stop at Python's recursion limit, which counts
    the caller's frames, so a body nested about 900 levels deep was fingerprinted in a worker and not in the parent
    (its rows depended on its place in a chunk), and one orjson read but the rendering could not stopped the run.
    With a headroom of its own (``RECURSION_HEADROOM``) every reader and stack gives the same rows; a body deeper
    than any reader takes (orjson's 1,024 levels) is kept whole, unfingerprinted, and the piece goes on."""
    lines = []
    for n in range(24):
        kind = n % 4
        lines.append(_deep_envelope(n, "tools" if kind in (1, 3) else "metadata", 960 + n if kind else 3, kind == 2))
    lines.append(_deep_envelope(99, "tools", 5000))  # beyond orjson's and json.loads' reach
    monkeypatch.setattr(body_chunks, "_tools_memo", {})
    limit = sys.getrecursionlimit()
    expected = body_chunks.fingerprint_piece(lines, "dt", "da", [False] * len(lines))
    assert [row[0] for row in expected.rows] == list(range(24))  # every line but the last one fingerprinted
    assert expected.cut == [None] * len(lines)
    for frames in (100, 600):  # a caller deep in its own stack (the CLI under Dagster is a few hundred frames deep)
        assert _at_stack_depth(frames, lambda: body_chunks.fingerprint_piece(lines, "dt", "da", [False] * len(lines))
                               ).rows == expected.rows
    monkeypatch.setattr(body_chunks, "POOL_MIN_LINES", 1)
    monkeypatch.setattr(body_chunks, "_cores", lambda: 2)  # the halves in two workers, at their own stack depth
    assert body_chunks.fingerprint_lines(pa.array(lines, pa.string()), "dt", "da", {}, [False] * len(lines)).rows \
        == expected.rows
    # the walk (deferred lines, bodies cut) reads them alike, and cuts the ones it fingerprints
    walked = body_chunks.fingerprint_piece(lines, "dt", "da")
    assert [row[:6] for row in walked.rows] == [row[:6] for row in expected.rows]
    assert sum(c is not None for c in walked.cut) == 24 and walked.cut[-1] is None
    assert sys.getrecursionlimit() == limit  # restored after each piece
