"""pipelines/lib/snapshot_copy.py: the readers' copy is the warehouse byte for byte, written block by block when
the copy before it is free, and never touches a file a reader has open."""

import hashlib
import os

import duckdb
import pytest

from pipelines.lib import snapshot_copy, warehouse


def add_day(db, day: int, rows: int = 150_000) -> None:
    """Append one day of rows to ``t`` and checkpoint (as a run's publish does)."""
    with duckdb.connect(str(db), config=warehouse.CONNECTION_CONFIG) as conn:
        conn.execute("create table if not exists t (day int, request_id varchar, tokens bigint)")
        conn.execute(f"insert into t select {day}, 'r{day}-' || i, i * 7 from range({rows}) r(i)")
        conn.execute("checkpoint")


def publish(db, target):
    with duckdb.connect(str(db), read_only=True) as conn:
        block_size = conn.execute("select block_size from pragma_database_size()").fetchone()[0]
    return snapshot_copy.publish(db, target, block_size)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def days_in(path) -> list:
    with duckdb.connect(str(path), read_only=True) as conn:
        return conn.execute("select day, count(*) from t group by 1 order by 1").fetchall()


def test_each_publish_is_the_warehouse_byte_for_byte_and_a_free_spare_is_updated_in_place(tmp_path):
    db, target = tmp_path / "w.duckdb", tmp_path / "w.snapshot.duckdb"
    for day in range(6):
        add_day(db, day)
    first = publish(db, target)
    assert first["spare_reused"] is False and first["bytes_written"] == first["bytes"] == db.stat().st_size
    add_day(db, 6)
    second = publish(db, target)  # the first copy is now the spare: no reader has it, but it is two states old
    assert second["spare_reused"] is False  # there was no spare before the second publish
    add_day(db, 7)
    third = publish(db, target)
    assert third["spare_reused"] is True
    assert digest(target) == digest(db)
    # the first copy (six days) brought to eight: the new days' blocks and the few DuckDB moved, not the file
    assert third["bytes_written"] < third["bytes"] / 2
    assert days_in(target) == [(day, 150_000) for day in range(8)]
    assert digest(tmp_path / "w.snapshot.duckdb.spare") != digest(db)  # the second copy, kept for the next publish
    assert not (tmp_path / "w.snapshot.duckdb.partial").exists()


def test_a_spare_a_reader_still_has_open_is_left_alone(tmp_path):
    db, target = tmp_path / "w.duckdb", tmp_path / "w.snapshot.duckdb"
    add_day(db, 0)
    publish(db, target)
    reader = duckdb.connect(str(target), read_only=True)  # opens the first copy, and keeps it open
    add_day(db, 1)
    publish(db, target)  # the first copy becomes the spare, still open in the reader
    add_day(db, 2)
    third = publish(db, target)
    assert third["spare_reused"] is False  # the reader's file is not rewritten under it
    assert reader.execute("select day, count(*) from t group by 1").fetchall() == [(0, 150_000)]
    reader.close()
    assert digest(target) == digest(db)
    add_day(db, 3)
    assert publish(db, target)["spare_reused"] is True  # the second copy, no reader: reused
    assert days_in(target) == [(day, 150_000) for day in range(4)]


def test_a_spare_that_is_the_published_file_itself_is_never_written(tmp_path):
    """A publish stopped between its two renames leaves the spare and the snapshot one file (a hard link)."""
    db, target = tmp_path / "w.duckdb", tmp_path / "w.snapshot.duckdb"
    add_day(db, 0)
    publish(db, target)
    os.link(target, tmp_path / "w.snapshot.duckdb.spare")
    before = days_in(target)
    add_day(db, 1)
    result = publish(db, target)
    assert result["spare_reused"] is False
    assert days_in(tmp_path / "w.snapshot.duckdb.spare") == before  # the old snapshot, untouched
    assert digest(target) == digest(db)


def test_a_file_without_duckdbs_block_layout_is_copied_whole(tmp_path):
    source, target = tmp_path / "w.duckdb", tmp_path / "w.snapshot.duckdb"
    source.write_bytes(b"x" * (snapshot_copy.HEADER_BYTES + 1000))
    (tmp_path / "w.snapshot.duckdb.spare").write_bytes(b"y" * (snapshot_copy.HEADER_BYTES + 1000))
    result = snapshot_copy.publish(source, target, 262_144)
    assert result == {"bytes": snapshot_copy.HEADER_BYTES + 1000, "bytes_written": snapshot_copy.HEADER_BYTES + 1000,
                      "spare_reused": False}
    assert target.read_bytes() == source.read_bytes()


def test_a_folder_without_hard_links_publishes_whole_copies(tmp_path, monkeypatch):
    """Some network shares refuse hard links: the snapshot is still published, with no spare kept."""
    def refuse(source, link):
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(snapshot_copy.os, "link", refuse)
    db, target = tmp_path / "w.duckdb", tmp_path / "w.snapshot.duckdb"
    for day in range(3):
        add_day(db, day)
        result = publish(db, target)
        assert result["spare_reused"] is False and result["bytes_written"] == db.stat().st_size
        assert digest(target) == digest(db)
    assert not (tmp_path / "w.snapshot.duckdb.spare").exists()
    assert days_in(target) == [(day, 150_000) for day in range(3)]


def test_a_full_disk_removes_the_part_written_and_names_the_snapshot(tmp_path, monkeypatch):
    # a break test: a full disk while publishing left <snapshot>.partial (megabytes, up to a warehouse's size) holding
    # the disk full until the next run, and the error named no file ("[Errno 28] No space left on device")
    db, target = tmp_path / "w.duckdb", tmp_path / "w.snapshot.duckdb"
    add_day(db, 0)
    publish(db, target)
    before = digest(target)
    add_day(db, 1)
    copy = snapshot_copy._copy_range

    def fills_the_disk(src, out, offset, length):
        copy(src, out, offset, min(length, 4096))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_copy, "_copy_range", fills_the_disk)
    with pytest.raises(OSError) as full:
        publish(db, target)
    assert full.value.errno == 28 and str(full.value) == (
        f"[Errno 28] No space left on device while publishing the snapshot: '{target}'")
    assert not (tmp_path / "w.snapshot.duckdb.partial").exists() and digest(target) == before
