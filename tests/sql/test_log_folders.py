"""Real log folders lose nothing: odd names, rotation, symlinks, unreadable entries, duplicate ids, many files.

Each numbered test is a regression test for that item of issue 16; ``test_folder_operations_*`` runs seeded
random sequences of folder operations and compares the warehouse after every step with a fresh build of
the files then present plus the history the README promises to keep.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from pipelines.ingest.discover import LogFile
from pipelines.ingest.readers import HEAD_BYTES
from pipelines.lib.sql import statement

TS = "2026-11-20T10:00:00Z"
LATEST = datetime(2030, 1, 1, tzinfo=timezone.utc)


def line(prompt: int, request_id: str | None = None) -> str:
    """One OpenAI chat envelope (the fast lane takes it) with ``prompt`` prompt tokens."""
    body = {"id": "chatcmpl-x", "object": "chat.completion", "created": 1795000000, "model": "gpt-4.1",
            "usage": {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5,
                      "prompt_tokens_details": {"cached_tokens": 0}}}
    if request_id is None:
        del body["id"]
    envelope = {"ts": TS, "provider": "openai", "model": "gpt-4.1", "response": body}
    if request_id is not None:
        envelope["request_id"] = request_id
    return json.dumps(envelope) + "\n"


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return path


def stage(conn, logs: Path):
    return ingest.stage_logs(conn, logs, latest=LATEST)


def tokens_by_file(conn) -> list[tuple]:
    return conn.execute("select source_file, count(*), sum(prompt_tokens) from core.usage group by 1 order by 1").fetchall()


def accounting_holds(conn) -> bool:
    return conn.execute(statement("checks/files__rows_do_not_add_up")).fetchall() == [(0, "[]")]


@pytest.fixture
def conn(tmp_path):
    with warehouse.connect(tmp_path / "w.duckdb") as connection:
        yield connection


# ---- 1. file names are globs ------------------------------------------------------------------

@pytest.mark.parametrize(("batched", "folder"), [(True, "logs"), (False, "logs"), (False, "lo[gs]")],
                         ids=["small-files-batch", "file-read-where-it-lies", "in-a-folder-named-like-a-glob"])
def test_01_glob_characters_in_file_names_are_read_literally(tmp_path, conn, monkeypatch, batched, folder):
    if not batched:  # every file alone: DuckDB reads it by its path
        monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0, raising=False)
    logs = tmp_path / folder
    write(logs / "usage1.jsonl", line(100))
    write(logs / "usage[1].jsonl", line(200))
    write(logs / "a*b?.jsonl", line(300))
    write(logs / "{x,y}.jsonl", line(400))
    results = stage(conn, logs)
    assert tokens_by_file(conn) == [("a*b?.jsonl", 1, 300), ("usage1.jsonl", 1, 100), ("usage[1].jsonl", 1, 200),
                                    ("{x,y}.jsonl", 1, 400)]
    assert [(r.source_file, r.rows_in, r.rows_accepted) for r in results] == [
        ("a*b?.jsonl", 1, 1), ("usage1.jsonl", 1, 1), ("usage[1].jsonl", 1, 1), ("{x,y}.jsonl", 1, 1)]


# ---- 3. copytruncate rotation ------------------------------------------------------------------

def test_03_copytruncate_rotation_keeps_the_old_rows_once_under_the_rotated_copy(tmp_path, conn):
    logs = tmp_path / "logs"
    app = write(logs / "app.jsonl", *[line(1000 + i) for i in range(4)])
    stage(conn, logs)
    shutil.copy(app, logs / "app.jsonl.1")  # logrotate copytruncate: copy, then truncate in place
    app.write_text("")
    with app.open("a") as handle:
        handle.write(line(7))
    results = stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 1, 7), ("app.jsonl.1", 4, 4006)]
    assert [(r.source_file, r.rows_accepted) for r in results] == [("app.jsonl", 1), ("app.jsonl.1", 4)]
    assert conn.execute("select count(*) from core.quarantine").fetchall() == [(0,)]
    assert accounting_holds(conn)


def test_03_a_truncated_file_keeps_its_earlier_rows_as_history_when_no_copy_is_in_the_folder(tmp_path, conn):
    logs = tmp_path / "logs"
    app = write(logs / "app.jsonl", *[line(1000 + i) for i in range(4)])
    stage(conn, logs)
    app.write_text(line(7))  # truncated (the copy went elsewhere) and written again
    stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 1, 7), ("app.jsonl#1", 4, 4006)]
    # the rotated copy turns up later (moved in from elsewhere): recognised, it takes the history over
    write(logs / "app.jsonl-20261128", *[line(1000 + i) for i in range(4)])
    stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 1, 7), ("app.jsonl-20261128", 4, 4006)]
    assert accounting_holds(conn)


def test_03_a_file_that_shrinks_keeping_some_ids_holds_each_id_once(tmp_path, conn):
    # an edit that removes records: the old generation is history (app.jsonl#1); the ids the file still
    # holds are kept from the file itself (its name sorts first) and quarantined as duplicates in the history
    logs = tmp_path / "logs"
    app = write(logs / "app.jsonl", *[line(1000 + i, f"r{i}") for i in range(5)])
    stage(conn, logs)
    app.write_text("".join(line(2000 + i, f"r{i}") for i in range(2)))
    stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 2, 4001), ("app.jsonl#1", 3, 3009)]
    assert conn.execute("select count(*), count(distinct request_id) from core.usage").fetchall() == [(5, 5)]
    assert conn.execute("select source_file, duplicate_request_id from core.quarantine order by 2").fetchall() == [
        ("app.jsonl#1", "r0"), ("app.jsonl#1", "r1")]
    assert accounting_holds(conn)


def test_03_a_replaced_file_keeps_the_duplicates_of_its_file_scoped_ids_as_history(tmp_path, conn):
    # found by a break test: a batch result's custom_id is scoped to its file (batch:<file>:<id>); a repeated one is a
    # quarantined duplicate. When the file was replaced, its rows moved to the history name with their ids minted
    # again from it, but the duplicate's quarantine row kept the old id, was deleted as a touched id's duplicate and
    # never written again: rows_in = accepted + quarantined failed on that run and on every run after it
    def result(custom_id: str) -> str:
        body = {"object": "chat.completion", "created": 1795140847, "model": "gpt-4.1-mini-2025-04-14",
                "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}
        return json.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": body}}) + "\n"

    logs = tmp_path / "logs"
    batch = write(logs / "batch_output.jsonl", result("req-1"), result("req-1"), result("req-2"))
    stage(conn, logs)
    assert conn.execute("select duplicate_request_id from core.quarantine").fetchall() == [
        ("batch:batch_output.jsonl:req-1",)]
    batch.write_text(result("req-9"))
    stage(conn, logs)
    assert conn.execute("select source_file, duplicate_request_id from core.quarantine").fetchall() == [
        ("batch_output.jsonl#1", "batch:batch_output.jsonl#1:req-1")]
    assert sorted(conn.execute("select source_file, request_id from core.usage").fetchall()) == [
        ("batch_output.jsonl", "batch:batch_output.jsonl:req-9"),
        ("batch_output.jsonl#1", "batch:batch_output.jsonl#1:req-1"),
        ("batch_output.jsonl#1", "batch:batch_output.jsonl#1:req-2")]
    assert accounting_holds(conn)
    stage(conn, logs)  # and the next run still adds up
    assert accounting_holds(conn)


def test_03_a_renamed_file_is_recognised_not_counted_twice(tmp_path, conn):
    logs = tmp_path / "logs"
    write(logs / "app.jsonl", *[line(10 + i) for i in range(3)])
    stage(conn, logs)
    (logs / "app.jsonl").rename(logs / "app.jsonl.1")
    write(logs / "app.jsonl", line(99))
    stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 1, 99), ("app.jsonl.1", 3, 33)]


# ---- 4. symlinks --------------------------------------------------------------------------------

def test_03_a_file_sharing_only_its_first_4kb_with_a_staged_one_does_not_take_its_rows(tmp_path, conn):
    # 20 records (about 5 KB) in common, then different tails: the second file is not the first one grown
    logs = tmp_path / "logs"
    common = [line(1000 + i) for i in range(20)]
    write(logs / "a.jsonl", *common, *[line(5000 + i) for i in range(3)])
    stage(conn, logs)
    (logs / "a.jsonl").unlink()
    write(logs / "b.jsonl", *common, *[line(8000 + i) for i in range(5)])
    stage(conn, logs)
    assert tokens_by_file(conn) == [("a.jsonl", 23, 35193), ("b.jsonl", 25, 60200)]  # a deleted file keeps its rows
    (logs / "b.jsonl").rename(logs / "c.jsonl")  # renamed and its tail rewritten: another file, b keeps its rows
    with (logs / "c.jsonl").open("r+") as handle:
        handle.seek(sum(map(len, common)))
        handle.write("".join(line(9000 + i) for i in range(6)))
    stage(conn, logs)
    assert tokens_by_file(conn) == [("a.jsonl", 23, 35193), ("b.jsonl", 25, 60200), ("c.jsonl", 26, 74205)]
    (logs / "c.jsonl").rename(logs / "d.jsonl")  # renamed and appended to: the same file grown, counted once
    with (logs / "d.jsonl").open("a") as handle:
        handle.write(line(7))
    stage(conn, logs)
    assert tokens_by_file(conn) == [("a.jsonl", 23, 35193), ("b.jsonl", 25, 60200), ("d.jsonl", 27, 74212)]
    assert accounting_holds(conn)


def test_04_a_symlink_to_a_file_in_the_folder_is_staged_once(tmp_path, conn):
    logs = tmp_path / "logs"
    write(logs / "app.jsonl", *[line(100 + i) for i in range(6)])  # no request ids: ids come from file and line
    (logs / "current.jsonl").symlink_to("app.jsonl")
    (logs / "sub").mkdir()
    (logs / "sub" / "again.jsonl").symlink_to(logs / "app.jsonl")
    results = stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 6, 615)]
    assert [r.source_file for r in results] == ["app.jsonl"]


def test_04_a_dangling_symlink_a_fifo_and_links_out_of_the_folder_are_skipped_with_a_warning(tmp_path, conn):
    # break tests: each was skipped without a word (a FIFO is never read: it would block the run; a log moved out of
    # the folder and linked back looked like rows lost)
    from pipelines.lib import progress

    logs = tmp_path / "logs"
    write(logs / "app.jsonl", line(100, "a"))
    (logs / "current.jsonl").symlink_to("app-2026-11-21.jsonl")  # rotated away, the new file not there yet
    os.mkfifo(logs / "pipe.jsonl")
    write(tmp_path / "elsewhere" / "moved.jsonl", line(200, "m"))
    (logs / "moved.jsonl").symlink_to(tmp_path / "elsewhere" / "moved.jsonl")
    (logs / "archive").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    heard = []
    progress.set_listener(lambda step, done, total, label: heard.append(label) if step == "warning" else None)
    try:
        results = stage(conn, logs)
    finally:
        progress.set_listener(None)
    assert [r.source_file for r in results] == ["app.jsonl"] and tokens_by_file(conn) == [("app.jsonl", 1, 100)]
    assert "current.jsonl: a symlink to app-2026-11-21.jsonl, which does not exist: skipped" in heard
    assert "pipe.jsonl: not a regular file (a FIFO): skipped" in heard
    assert (f"moved.jsonl: a symlink out of the logs folder (to {tmp_path / 'elsewhere' / 'moved.jsonl'}): skipped; "
            "--follow-symlinks reads it") in heard
    assert f"archive/: a symlink out of the logs folder (to {tmp_path / 'elsewhere'}): skipped; --follow-symlinks reads it" in heard
    assert len(heard) == 4


def test_03_lines_appended_to_a_file_of_many_days_mark_only_the_days_they_change(tmp_path, conn):
    # a break test: appending one day's lines to a file of ten days rebuilt all eleven (the README promises only the
    # days new or changed records touch; a file per day rebuilt one)
    def day_line(day: int, n: int, prompt: int = 100) -> str:
        return line(prompt, f"d{day}-{n}").replace(TS, f"2026-10-{day:02d}T10:00:00Z")

    def pending_after(*lines: str, rewrite: bool = False) -> list[int]:
        conn.execute("delete from stage.pending_days")
        if rewrite:
            write(logs / "app.jsonl", *lines)
        else:
            with open(logs / "app.jsonl", "a") as f:
                f.write("".join(lines))
        stage(conn, logs)
        return [d.day for (d,) in conn.execute("select day from stage.pending_days where not dependent order by day")
                .fetchall()]

    logs = tmp_path / "logs"
    days = [day_line(d, n) for d in range(1, 11) for n in range(3)]
    write(logs / "app.jsonl", *days)
    stage(conn, logs)
    assert pending_after(day_line(11, 0), day_line(11, 1)) == [11]
    # a line of day 9 edited in place (past the first 4 KB, which tell a file from a new one by that name): day 9 only
    assert len("".join(days[:25]).encode()) > HEAD_BYTES
    edited = [*days[:25], day_line(9, 1, prompt=999), *days[26:], day_line(11, 0), day_line(11, 1)]
    assert pending_after(*edited, rewrite=True) == [9]
    # a partial last line, then the same line whole: its quarantined copy sat on day 11 (the line before it)
    assert pending_after('{"ts": "2026-10-12T10:00:00Z", "provid') == [11]
    assert pending_after(*edited, day_line(12, 0), rewrite=True) == [11, 12]
    assert accounting_holds(conn) and tokens_by_file(conn) == [("app.jsonl", 33, 100 * 31 + 999 + 100)]


# ---- 5. unreadable subfolder ----------------------------------------------------------------------

def test_05_an_unreadable_subfolder_is_reported_and_the_rest_staged(tmp_path, conn, monkeypatch):
    logs = tmp_path / "logs"
    write(logs / "ok.jsonl", line(5))
    write(logs / "locked" / "hidden.jsonl", line(6))
    real_scandir = os.scandir

    def scandir(path="."):
        if isinstance(path, (str, os.PathLike)) and Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    results = stage(conn, logs)
    assert [r.source_file for r in results] == ["locked/", "ok.jsonl"]
    assert [(r.source_file, r.rows_in, r.rows_quarantined, r.error) for r in results] == [
        ("locked/", 1, 1, "cannot list folder: Permission denied"), ("ok.jsonl", 1, 0, None)]
    assert conn.execute("select source_file, source_line, reason from core.quarantine").fetchall() == [
        ("locked/", 0, "cannot list folder: Permission denied")]
    monkeypatch.setattr(os, "scandir", real_scandir)  # fixed: the folder's files are staged, the report goes
    stage(conn, logs)
    assert tokens_by_file(conn) == [("locked/hidden.jsonl", 1, 6), ("ok.jsonl", 1, 5)]
    assert conn.execute("select count(*) from core.quarantine").fetchall() == [(0,)]
    assert accounting_holds(conn)


# ---- 8. permission-denied file ------------------------------------------------------------------

def deny(monkeypatch, name: str) -> None:
    """Opening a file called ``name`` fails as a file without read permission does (tests may run as root)."""
    real_open = builtins.open

    def guarded(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).name == name:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)


@pytest.mark.parametrize("size", ["small", "large"])
def test_08_a_permission_denied_file_is_reported_and_the_rest_staged(tmp_path, conn, monkeypatch, size):
    if size == "large":
        monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0, raising=False)
    logs = tmp_path / "logs"
    write(logs / "a.jsonl", line(1))
    locked = write(logs / "locked.jsonl", line(2))
    write(logs / "z.jsonl", line(3))
    locked.chmod(0)
    deny(monkeypatch, "locked.jsonl")
    results = stage(conn, logs)
    assert [(r.source_file, r.rows_in, r.rows_accepted, r.rows_quarantined, r.error is not None) for r in results] == [
        ("a.jsonl", 1, 1, 0, False), ("locked.jsonl", 1, 0, 1, True), ("z.jsonl", 1, 1, 0, False)]
    assert conn.execute("select source_file, source_line, reason from core.quarantine").fetchall() == [
        ("locked.jsonl", 0, "cannot read file: Permission denied")]
    assert stage(conn, logs)[1].rows_quarantined == 1  # tried again, still reported, nothing else changes
    locked.chmod(0o644)
    monkeypatch.undo()
    if size == "large":
        monkeypatch.setattr(ingest, "SMALL_FILE_BYTES", 0, raising=False)
    stage(conn, logs)
    assert tokens_by_file(conn) == [("a.jsonl", 1, 1), ("locked.jsonl", 1, 2), ("z.jsonl", 1, 3)]
    assert conn.execute("select count(*) from core.quarantine").fetchall() == [(0,)]


def test_08_a_file_staged_before_that_becomes_unreadable_keeps_its_rows(tmp_path, conn, monkeypatch):
    logs = tmp_path / "logs"
    app = write(logs / "app.jsonl", line(1), line(2))
    stage(conn, logs)
    with app.open("a") as handle:
        handle.write(line(3))
    deny(monkeypatch, "app.jsonl")
    (result,) = stage(conn, logs)
    assert result.error == "cannot read file: Permission denied" and result.rows_accepted == 2
    # said, not skipped silently: the line appended since is not read until the file is readable again
    assert result.note == ("not read this run (cannot read file: Permission denied); the 2 rows staged from it before "
                           "are kept, and it is read again once that is fixed")
    assert tokens_by_file(conn) == [("app.jsonl", 2, 3)]
    monkeypatch.undo()
    stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 3, 6)]


# ---- 9. non-UTF-8 file name ---------------------------------------------------------------------

def test_09_a_file_name_that_is_not_utf8_is_staged_under_a_safe_name(tmp_path, conn):
    logs = tmp_path / "logs"
    write(logs / "ok.jsonl", line(1))
    raw = os.path.join(os.fsencode(logs), b"caf\xe9.jsonl")
    with open(raw, "wb") as handle:
        handle.write(line(2).encode())
    results = stage(conn, logs)
    assert [(r.source_file, r.rows_accepted) for r in results] == [("caf\\xe9.jsonl", 1), ("ok.jsonl", 1)]
    assert tokens_by_file(conn) == [("caf\\xe9.jsonl", 1, 2), ("ok.jsonl", 1, 1)]
    assert stage(conn, logs)[0].skipped  # found again under the same name


# ---- 6. a .json file holding several values ----------------------------------------------------

def records(*prompts: int) -> list[dict]:
    return [json.loads(line(prompt)) for prompt in prompts]


@pytest.mark.parametrize("text, accepted, quarantined", [
    (json.dumps(records(1, 2)) + "\n" + json.dumps(records(3, 4)) + "\n", 4, 0),  # two exports concatenated
    (json.dumps(records(1, 2), indent=2) + "\n" + json.dumps(records(3, 4), indent=2), 4, 0),
    ("\n".join(json.dumps(r, indent=2) for r in records(1, 2, 3, 4)), 4, 0),  # pretty-printed objects, one after another
    (json.dumps(records(1, 2, 3, 4), indent=2) + "\n\x00\x00", 4, 1),  # garbage after a sound array
], ids=["compact-arrays", "pretty-arrays", "pretty-objects", "array-then-garbage"])
def test_06_a_json_file_of_several_values_keeps_every_record(tmp_path, conn, text, accepted, quarantined):
    logs = tmp_path / "logs"
    write(logs / "export.json", text)
    (result,) = stage(conn, logs)
    assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (accepted + quarantined, accepted, quarantined)
    assert tokens_by_file(conn) == [("export.json", 4, 10)]
    assert accounting_holds(conn)


# ---- 7. duplicate ids do not depend on staging order ------------------------------------------

def test_07_the_kept_copy_of_a_duplicate_id_does_not_depend_on_arrival_order(tmp_path, conn):
    logs = tmp_path / "logs"
    write(logs / "b.jsonl", line(1000, "X"))
    stage(conn, logs)
    write(logs / "a.jsonl", line(5000, "X"))  # arrives later, sorts first: its copy is kept
    stage(conn, logs)
    incremental = snapshot(conn)
    with warehouse.prepare(duckdb.connect()) as fresh:
        stage(fresh, logs)
        assert snapshot(fresh) == incremental
    assert conn.execute("select source_file, prompt_tokens from core.usage").fetchall() == [("a.jsonl", 5000)]
    assert conn.execute("select source_file, reason from core.quarantine").fetchall() == [
        ("b.jsonl", "duplicate request_id X (first seen in a.jsonl:1)")]
    (logs / "a.jsonl").write_text(line(3, "other"))  # a new generation: the first copy stays as a.jsonl#1
    stage(conn, logs)
    assert conn.execute("select source_file, prompt_tokens from core.usage where request_id = 'X'").fetchall() == [
        ("a.jsonl#1", 5000)]
    assert accounting_holds(conn)


# ---- 15. many small files -------------------------------------------------------------------

def test_15_many_small_files_stage_exactly_as_one_file_at_a_time(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    # 80 one-line files over four folders (a file alone costs a staging each: 80, not more, keeps this test's
    # one-at-a-time build to about a sixth of the suite's slowest test); ids repeat across files and folders
    for i in range(80):
        write(logs / f"h{i // 20}" / f"req-{i:04d}.jsonl", line(100 + i, f"r{i % 60}" if i % 3 else None))
    write(logs / "h0" / "blank.jsonl", line(1), "\n   \n", line(2))
    write(logs / "h0" / "bad.jsonl", "{not json\n", line(3, "r5"))
    (logs / "h1" / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + line(4).encode())
    write(logs / "h1" / "other.csv", "ts,provider,model,prompt_tokens,output_tokens\n", f"{TS},openai,gpt-4.1,10,1\n")
    write(logs / "h2" / "empty.jsonl")
    builds = []
    many = getattr(ingest, "BATCH_FILES", 1)
    for batch_files, fast_lane in ((many, True), (1, True), (many, False)):
        monkeypatch.setattr(ingest, "BATCH_FILES", batch_files, raising=False)
        with warehouse.prepare(duckdb.connect()) as fresh:
            results = ingest.stage_logs(fresh, logs, latest=LATEST, fast_lane=fast_lane)
            builds.append(([(r.source_file, r.rows_in, r.rows_accepted, r.rows_quarantined) for r in results],
                           snapshot(fresh)))
            assert accounting_holds(fresh)
    assert builds[0] == builds[1] == builds[2]
    files, (usage, quarantine, _) = builds[0]
    assert len(files) == 85 and sum(f[1] for f in files) == 80 + 2 + 2 + 1 + 1
    ids = [f"r{i % 60}" for i in range(80) if i % 3]
    repeats = len(ids) - len(set(ids)) + 1  # and bad.jsonl's r5
    assert repeats == 14  # the ids of files 61 .. 79 (13 of them) are those of files 1 .. 19; and bad.jsonl's r5
    assert len(usage) == 80 + 2 + 1 + 1 - repeats  # the small files, blank.jsonl, bad.jsonl, bom.jsonl
    assert len(quarantine) == repeats + 2  # and bad.jsonl's malformed line, other.csv's row of no known shape


# ---- randomized folder operations ------------------------------------------------------------

USAGE = "request_id, source_file, source_line, source_item, prompt_tokens"
QUARANTINE = "source_file, source_line, source_item, reason, duplicate_request_id"
FILES = "source_file, rows_in, rows_accepted, rows_quarantined"


def snapshot(conn) -> tuple[list, list, list]:
    """The staging-level state compared between builds: core.usage, core.quarantine, stage.files."""
    return (conn.execute(f"select {USAGE} from core.usage order by all").fetchall(),
            conn.execute(f"select {QUARANTINE} from core.quarantine order by all").fetchall(),
            conn.execute(f"select {FILES} from stage.files order by all").fetchall())


class Folder:
    """A logs folder under operations, with the model of what the warehouse must hold.

    ``generations`` maps each name the warehouse keeps rows under to the content last staged there:
    the files then present, a deleted file under its own name, and a previous generation of a file
    that shrank or was replaced under ``<name>#<n>``. Content still present in the folder (as the
    start of some file) is never kept twice.
    """

    NAMES = ("app.jsonl", "app.jsonl.1", "b.jsonl", "c.jsonl.2")

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True)
        self.counter = 0
        self.generations: dict[str, bytes] = {}
        self.history_numbers: dict[str, int] = {}

    def records(self, count: int, ids: bool) -> str:
        out = []
        for _ in range(count):
            self.counter += 1
            out.append(line(self.counter, f"dup-{self.counter % 3}" if ids and self.counter % 2 else None))
        return "".join(out)

    def real_files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.root.iterdir()) if p.is_file() and not p.is_symlink()}

    def apply(self, op: str, pick: int, size: int, ids: bool) -> None:
        files = sorted(self.real_files())
        target = self.root / (files[pick % len(files)] if files else self.NAMES[0])
        name = self.NAMES[pick % len(self.NAMES)]
        if op == "append" or not files:
            with (self.root / name).open("a") as handle:
                handle.write(self.records(size, ids))
        elif op == "rotate_rename":
            os.replace(target, self.root / f"{target.name}.{1 + pick % 2}" if not target.name[-1].isdigit()
                       else self.root / ("r" + target.name))
        elif op == "rotate_copytruncate":
            rotated = self.root / (target.name + ".1" if not target.name[-1].isdigit() else "r" + target.name)
            shutil.copyfile(target, rotated)
            target.write_text(self.records(size // 2, ids))
        elif op == "replace":
            target.write_text(self.records(size, ids))
        elif op == "delete":
            links = [p for p in self.root.iterdir() if p.is_symlink()]
            (links[pick % len(links)] if links and pick % 2 else target).unlink()
        elif op == "append_many":  # past HEAD_BYTES: continuity then rests on the tail too
            with target.open("a") as handle:
                handle.write(self.records(6 * size, ids))
        elif op == "edit_tail":  # the last record rewritten, no shorter; in place, or under a new name
            data = target.read_bytes()
            kept = data[:data.rstrip(b"\n").rfind(b"\n") + 1]
            edited = kept + self.records(2, ids).encode()
            if pick % 2:
                target.unlink()
                target = self.root / ("e" + target.name)
            target.write_bytes(edited)
        elif op == "symlink":
            link = self.root / f"current-{pick % 2}.jsonl"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target.name)

    def update_model(self) -> None:
        """After an operation, before staging: which earlier generations the warehouse must still hold."""
        present = {name: data for name, data in self.real_files().items() if _is_log(name)}
        kept: dict[str, bytes] = {}
        for name, old in self.generations.items():
            if not _records(old):
                continue
            if name in present and _same_file_grown(present[name], old):
                continue  # the same file, grown (or edited past its first 4 KB): staged again
            if any(data.startswith(old) for other, data in present.items() if other != name):
                continue  # renamed or copied: the file holding it now has its rows
            if name in present:  # shrank or was replaced: the old generation becomes history
                self.history_numbers[name] = self.history_numbers.get(name, 0) + 1
                kept[f"{name}#{self.history_numbers[name]}"] = old
            else:
                kept[name] = old  # deleted (or history): kept under its name
        self.generations = {**kept, **present}
        self.history = kept

    def state(self) -> tuple:
        """The folder's entries (name and bytes, or a symlink's target) and the history the warehouse keeps."""
        entries = tuple(sorted((p.name, ("->", os.readlink(p)) if p.is_symlink() else p.read_bytes())
                               for p in self.root.iterdir()))
        return entries, tuple(sorted(self.history.items()))

    def fresh_build(self, tmp: Path) -> tuple:
        """What a new warehouse staging the folder and the history holds (``snapshot``). Hypothesis's examples share
        prefixes of operations, so the same state recurs; its build is kept (``FRESH_BUILDS``): a fresh build is a
        function of the state alone, and building it once per state keeps this test inside the CI budget."""
        state = self.state()
        if state not in FRESH_BUILDS:
            FRESH_BUILDS[state] = self._build(tmp)
        return FRESH_BUILDS[state]

    def _build(self, tmp: Path) -> tuple:
        with warehouse.prepare(duckdb.connect()) as fresh:
            stage(fresh, self.root)
            for index, (name, data) in enumerate(sorted(self.history.items())):
                copy = tmp / f"history-{index}.jsonl"
                copy.write_bytes(data)
                ingest.stage_file(fresh, LogFile(path=copy, relative=name), latest=LATEST)
            return snapshot(fresh)


FRESH_BUILDS: dict[tuple, tuple] = {}  # Folder.state() -> its fresh build's snapshot


def _is_log(name: str) -> bool:
    from pipelines.ingest.discover import is_log_name
    return is_log_name(name)


def _same_file_grown(new: bytes, old: bytes) -> bool:
    """At its own name a file continues its staged content when no shorter and its first 4 KB are the same."""
    return len(new) >= len(old) and new.startswith(old[:HEAD_BYTES])


def _records(data: bytes) -> int:
    return sum(1 for piece in data.split(b"\n") if piece.strip())


OPERATIONS = st.lists(st.tuples(
    st.sampled_from(["append", "append", "append_many", "rotate_rename", "rotate_copytruncate", "replace", "edit_tail",
                     "delete", "symlink"]),
    st.integers(0, 7), st.integers(1, 4), st.booleans()), min_size=2, max_size=5)


@settings(max_examples=50, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(operations=OPERATIONS)
@example(operations=[("append", 0, 4, False), ("append_many", 0, 4, False), ("edit_tail", 0, 1, False)])  # in place
@example(operations=[("append", 0, 4, True), ("append_many", 0, 4, True), ("edit_tail", 1, 1, True)])  # renamed
def test_folder_operations_leave_the_warehouse_equal_to_a_fresh_build_plus_history(tmp_path_factory, operations):
    tmp = tmp_path_factory.mktemp("ops")
    folder = Folder(tmp / "logs")
    with warehouse.prepare(duckdb.connect()) as conn:
        for step, (op, pick, size, ids) in enumerate(operations):
            folder.apply(op, pick, size, ids)
            folder.update_model()
            stage(conn, folder.root)
            expected = folder.fresh_build(tmp)
            assert snapshot(conn) == expected, (step, operations[:step + 1], sorted(folder.history))
            assert accounting_holds(conn)
            assert conn.execute("select count(*) - count(distinct request_id) from core.usage").fetchall() == [(0,)]


def test_every_large_file_of_a_run_stays_visible_to_the_rest_of_the_run(tmp_path):
    # DuckDB 1.5.5 hid the second of two 150,000-request files from every later query of the run that
    # staged it (its commit's automatic checkpoint; the file held the rows). The accounting check stopped
    # the run; a reopen showed them. Measured with these very logs (bench/generate.py, 300,000 requests
    # over two days); lib/warehouse.settle checkpoints after each commit.
    import sys

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(300_000, 2, tmp_path / "logs")
    conn = warehouse.connect(tmp_path / "w.duckdb")
    results = ingest.stage_logs(conn, tmp_path / "logs", earliest=datetime(2026, 1, 1).date())
    assert [(r.source_file, r.rows_in, r.rows_accepted) for r in results] == [
        ("usage-2026-10-01.jsonl", 150_000, 150_000), ("usage-2026-10-02.jsonl", 150_000, 150_000)]
    assert conn.execute("select source_file, count(*) from core.usage group by all order by 1").fetchall() == [
        ("usage-2026-10-01.jsonl", 150_000), ("usage-2026-10-02.jsonl", 150_000)]
    assert accounting_holds(conn)
    conn.close()


# ---- rotation under the names rotating tools give -------------------------------------------------

@pytest.mark.parametrize("suffix", [".1", "-20261128", "-20261128-1764288000", "-2026-11-28", ".2026-11-28",
                                    ".2026-11-28_10", ".2026-11-28_10-00", ".2026-11-28_10-00-00"])
def test_a_file_rotated_after_lines_were_appended_keeps_every_line_once_under_its_rotated_name(tmp_path, conn, suffix):
    # logrotate (numbered, dateext with -%Y%m%d, -%Y%m%d-%s, -%Y-%m-%d) and Python's TimedRotatingFileHandler
    # (.%Y-%m-%d, _%H, _%H-%M, _%H-%M-%S): the lines appended since the last run used to be lost with a name that
    # was not read (the rotated file left the folder as if deleted; its staged rows stayed, the new ones were never read)
    logs = tmp_path / "logs"
    app = write(logs / "app.jsonl", *[line(100 + i, f"a{i}") for i in range(3)])
    stage(conn, logs)
    with app.open("a") as handle:
        handle.writelines(line(200 + i, f"b{i}") for i in range(2))
    app.rename(logs / f"app.jsonl{suffix}")
    write(logs / "app.jsonl", *[line(300 + i, f"c{i}") for i in range(2)])
    stage(conn, logs)
    assert tokens_by_file(conn) == [("app.jsonl", 2, 601), (f"app.jsonl{suffix}", 5, 100 + 101 + 102 + 200 + 201)]
    assert conn.execute("select count(*) from core.quarantine").fetchall() == [(0,)] and accounting_holds(conn)
    stage(conn, logs)  # nothing new: nothing changes
    assert tokens_by_file(conn) == [("app.jsonl", 2, 601), (f"app.jsonl{suffix}", 5, 100 + 101 + 102 + 200 + 201)]


def test_a_symlink_to_a_folder_inside_the_logs_folder_stages_the_folder_under_its_own_name_and_defaults(tmp_path, conn):
    logs = tmp_path / "logs"
    write(logs / "data" / "f.jsonl", line(100, "d0"), line(200, "d1"))
    write(logs / "data" / "source.yaml", "app: data-app\n")
    write(logs / "0" / "source.yaml", "app: zero-app\ntenant: zero-tenant\n")
    (logs / "0" / "link").symlink_to("../data")  # sorts before data/: the walk used to reach the files through it
    stage(conn, logs)
    assert conn.execute("select source_file, tenant, app, count(*) from core.usage group by all").fetchall() == [
        ("data/f.jsonl", "default", "data-app", 2)]
    assert accounting_holds(conn)


def test_a_line_cut_inside_a_string_is_quarantined_with_where_it_breaks_in_plain_words(tmp_path, conn):
    logs = tmp_path / "logs"
    write(logs / "app.jsonl", line(100, "a0"), '{"ts": "2026-11-20T10:00:00Z", "provider": "open')
    stage(conn, logs)
    assert conn.execute("select source_line, reason from core.quarantine").fetchall() == [
        (2, "malformed JSON: Unterminated string starting at line 1 column 44 (char 43)")]  # not "starting at at"
    assert tokens_by_file(conn) == [("app.jsonl", 1, 100)] and accounting_holds(conn)


def test_a_name_that_is_not_utf8_and_a_file_named_like_its_escapes_are_two_files(tmp_path, conn):
    # x<0xFF>.jsonl is stored as "x\xff.jsonl" (its undecodable byte escaped), which is also the literal name of another
    # file: the two read as one name and one file's rows were silently lost (2 of 5 lines accounted for)
    logs = tmp_path / "logs"
    logs.mkdir()
    with open(os.path.join(os.fsencode(logs), b"x\xff.jsonl"), "w") as raw:
        raw.writelines([line(100, "r0"), line(101, "r1")])
    write(logs / "x\\xff.jsonl", line(200, "l0"), line(201, "l1"), line(202, "l2"))
    stage(conn, logs)
    files = conn.execute("select source_file, rows_in, rows_accepted from stage.files order by 1").fetchall()
    assert files[0] == ("x\\xff.jsonl", 3, 3)  # the name that is text keeps it
    assert files[1][0].startswith("x\\xff.jsonl (name not UTF-8, ") and files[1][1:] == (2, 2)
    assert conn.execute("select count(*) from core.usage").fetchall() == [(5,)] and accounting_holds(conn)
    stage(conn, logs)  # again, nothing new: the same two files
    assert conn.execute("select source_file, rows_in, rows_accepted from stage.files order by 1").fetchall() == files


def test_a_bad_source_yaml_quarantines_its_folders_files_only_and_they_are_read_once_it_is_fixed(tmp_path, conn):
    # it stopped the whole run before: one team's typo left every other folder unstaged for the night
    logs = tmp_path / "logs"
    write(logs / "good" / "g.jsonl", line(100, "g0"), line(101, "g1"))
    write(logs / "bad" / "b.jsonl", line(200, "b0"), line(201, "b1"))
    write(logs / "bad" / "deeper" / "d.jsonl", line(300, "d0"))
    write(logs / "bad" / "source.yaml", "colour: red\n")
    stage(conn, logs)
    assert tokens_by_file(conn) == [("good/g.jsonl", 2, 201)]
    quarantined = conn.execute("select source_file, source_line, reason from core.quarantine order by 1").fetchall()
    assert [(name, number) for name, number, _ in quarantined] == [("bad/b.jsonl", 0), ("bad/deeper/d.jsonl", 0)]
    assert all(reason.startswith("bad source.yaml, so not read until it is fixed: ") and "unknown keys ['colour']" in reason
               and "bad/source.yaml" in reason for _, _, reason in quarantined)
    assert accounting_holds(conn)
    write(logs / "bad" / "source.yaml", "app: bad-app\n")  # fixed: the next run reads the folder
    stage(conn, logs)
    assert tokens_by_file(conn) == [("bad/b.jsonl", 2, 401), ("bad/deeper/d.jsonl", 1, 300), ("good/g.jsonl", 2, 201)]
    assert conn.execute("select count(*) from core.quarantine").fetchall() == [(0,)] and accounting_holds(conn)
    assert conn.execute("select distinct app from core.usage where source_file like 'bad/%'").fetchall() == [("bad-app",)]
    write(logs / "bad" / "source.yaml", "tenant: [x]\n")  # broken again: what was staged under it stays, and is said
    results = {r.source_file: r for r in stage(conn, logs)}
    assert results["bad/b.jsonl"].note.startswith("not read this run (bad source.yaml, so not read until it is fixed: ")
    assert "tenant must be text, not a list" in results["bad/b.jsonl"].note and results["good/g.jsonl"].note is None
    assert tokens_by_file(conn) == [("bad/b.jsonl", 2, 401), ("bad/deeper/d.jsonl", 1, 300), ("good/g.jsonl", 2, 201)]
    assert accounting_holds(conn)


def test_04_ndjson_is_read_as_jsonl_and_compressed_logs_of_other_kinds_are_named(tmp_path, conn):
    # a break test: .ndjson (a common name for JSON lines), .json.gz and .csv.gz files were skipped without a word
    import gzip

    from pipelines.lib import progress

    logs = tmp_path / "logs"
    write(logs / "a.ndjson", line(100, "a"))
    (logs / "b.ndjson.gz").write_bytes(gzip.compress(line(200, "b").encode()))
    (logs / "c.json.gz").write_bytes(gzip.compress(b"[]"))
    (logs / "d.csv.gz").write_bytes(gzip.compress(b"request_id\n"))
    (logs / "README.md").write_text("not a log\n")
    heard = []
    progress.set_listener(lambda step, done, total, label: heard.append(label) if step == "warning" else None)
    try:
        results = stage(conn, logs)
    finally:
        progress.set_listener(None)
    assert [r.source_file for r in results] == ["a.ndjson", "b.ndjson.gz"]
    assert tokens_by_file(conn) == [("a.ndjson", 1, 100), ("b.ndjson.gz", 1, 200)]
    assert heard == ["2 compressed file(s) of a kind not read, skipped: c.json.gz, d.csv.gz (read: *.jsonl.gz and "
                     "*.ndjson.gz; decompress the others)"]


def test_05_files_staged_by_an_older_version_of_staging_are_read_again_once(tmp_path, conn):
    # a break test: a warehouse upgraded past a change in what staging makes of a file (here the thinking a Gemini total
    # holds beyond its OpenAI-compatible output count) kept the rows the older code staged, unlike a fresh build, and no
    # option read the files again; a file staged by an older STAGED_ROWS_VERSION is now read again by the next run
    from pipelines.ingest import generations

    logs = tmp_path / "logs"
    write(logs / "gemini.jsonl", json.dumps({
        "ts": "2026-11-20T10:00:00Z", "provider": "gemini", "model": "gemini-2.5-flash", "request_id": "g", "response": {
            "object": "chat.completion", "model": "gemini-2.5-flash",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1600}}}) + "\n")
    write(logs / "other.jsonl", line(100, "a"))
    stage(conn, logs)
    # as the previous version left it: 100 output tokens, no version recorded
    conn.execute("update core.usage set output_tokens = 100, reasoning_tokens = null where request_id = 'g'")
    conn.execute("update stage.files set staged_version = null")
    again = stage(conn, logs)
    assert [(r.source_file, r.skipped) for r in again] == [("gemini.jsonl", False), ("other.jsonl", False)]
    assert conn.execute("select output_tokens, reasoning_tokens from core.usage where request_id = 'g'").fetchall() == [
        (600, 500)]
    assert conn.execute("select distinct staged_version from stage.files").fetchall() == [(generations.STAGED_ROWS_VERSION,)]
    assert all(r.skipped for r in stage(conn, logs))  # once
    assert accounting_holds(conn)
