"""pipelines/lib/warehouse.py: preparing a warehouse, including one from before a table was folded away."""

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, run_pipeline, snapshot, write_jsonl


def dated_model_logs(folder):
    """Two files, one per UTC day, of a dated OpenAI model id whose catalogue id (genai-prices) is the undated one."""
    for d in (1, 2):
        write_jsonl(folder / f"day-{d}.jsonl", [
            {"ts": f"2026-11-0{d}T{n:02d}:00:00Z", "provider": "openai", "model": "gpt-4o-2024-08-06",
             "request_id": f"d{d}-{n}", "response": {"usage": {"prompt_tokens": 2000 + n, "completion_tokens": 10,
                                                                "prompt_tokens_details": {"cached_tokens": 1024}}}}
            for n in range(12)])
    return folder


def old_table_present(db) -> bool:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute("select count(*) from duckdb_tables() where table_name = 'usage_rows'").fetchall() != [(0,)]


@pytest.fixture
def built(tmp_path):
    """(logs, warehouse, every table's rows) of a clean run."""
    logs = dated_model_logs(tmp_path / "logs")
    db = run_pipeline(tmp_path, logs)
    return logs, db, snapshot(db)


def test_staging_stores_each_row_once_with_its_catalogue_id(built):
    _, db, _ = built
    assert not old_table_present(db)
    with duckdb.connect(str(db), read_only=True) as conn:
        # genai-prices matches the dated snapshot id to its catalogue entry
        assert conn.execute("select price_model, count(*) from core.usage group by 1").fetchall() == [("gpt-4o", 24)]
        assert conn.execute("select count(*) from stage.pending_days").fetchall() == [(0,)]


# the layouts an older release leaves behind; each statement runs on the clean warehouse, and the
# next run (the logs unchanged: no file is staged again unless the move forgets it) must end equal to it
OLD_LAYOUTS = {
    # stage.usage_rows held every accepted record (no price_model); core.usage held copies of the days
    # built so far: here one day short, and one stale row
    "staged rows not yet moved": [
        "create table stage.usage_rows as select * exclude (price_model) from core.usage",
        "delete from core.usage where day = date '2026-11-02'",
        "insert into core.usage select * replace ('gone' as request_id) from core.usage limit 1",
    ],
    # an older release opened the moved warehouse again: its schema re-created the table, empty
    "old table re-created empty": [
        "create table stage.usage_rows as select * exclude (price_model) from core.usage where false",
    ],
    # an older release then staged one file and rebuilt a day from its own table: the other file's
    # rows of that day are gone from core.usage, and only the first file is in the old table
    "an older release ran again": [
        "create table stage.usage_rows as select * exclude (price_model) from core.usage where source_file = 'day-1.jsonl'",
        "delete from core.usage where source_file = 'day-2.jsonl' and request_id <> 'd2-0'",
    ],
}


@pytest.mark.parametrize("layout", OLD_LAYOUTS)
def test_a_warehouse_left_by_an_older_release_is_moved_over_without_losing_rows(built, layout):
    logs, db, clean = built
    with duckdb.connect(str(db)) as conn:
        for text in OLD_LAYOUTS[layout]:
            conn.execute(text)
        conn.execute("delete from stage.definitions_version")  # files from an older release

    run_pipeline(db.parent, logs)

    assert not old_table_present(db)
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("select count(*) from stage.pending_days").fetchall() == [(0,)]
    assert snapshot(db) == clean  # catalogue ids resolved again, days rebuilt, missing rows staged again


OLDER_COSTS = {
    # an older release's costs: no list cost nor cost basis columns filled
    "no list cost": "update core.usage_costs set list_cost_usd = null, cost_basis = null where day = date '2026-11-02'",
    # nor the quantities priced (93_core_usage_costs__add_priced_quantities.sql: the new columns are null)
    "no quantities priced": "update core.usage_costs set uncached_input_tokens = null, cache_read_tokens = null, "
                            "cache_write_5m_tokens = null, cache_write_1h_tokens = null, output_tokens = null, "
                            "reported_cost_usd = null where day = date '2026-11-02'",
    # family rows built before their day sums (94_marts_prefix_families__add_cache_write_premium.sql, 95_..._cached_spans)
    "no family day sums": "update marts.prefix_families set cache_write_premium_usd = null, cached_rows = null, "
                          "cached_requests = null, cached_span_tokens = null where day = date '2026-11-02'",
}


@pytest.mark.parametrize("older", OLDER_COSTS)
def test_a_warehouse_priced_by_an_older_release_is_repriced_on_the_next_run(built, older):
    logs, db, clean = built
    with duckdb.connect(str(db)) as conn:
        conn.execute(OLDER_COSTS[older])
        conn.execute("delete from stage.definitions_version")  # files from an older release

    run_pipeline(db.parent, logs)  # the logs unchanged: only the migration can mark the day pending

    assert snapshot(db) == clean


def row_groups_after_days(tmp_path, config, day_rows, compact_after_delete=False):
    """Row groups of a table after each day's rows are appended (one commit and ``settle`` per day), then after
    a delete of part of the third day settled with ``compact_after_delete``."""
    from pipelines.lib import warehouse

    tmp_path.mkdir()
    conn = duckdb.connect(str(tmp_path / "w.duckdb"), config=config)
    conn.execute("create table t (day int, v varchar)")
    groups = lambda: conn.execute("select count(distinct row_group_id) from pragma_storage_info('t')").fetchone()[0]
    counts = []
    for day, rows in enumerate(day_rows):
        conn.execute("begin")
        conn.execute(f"insert into t select {day}, 'x' || i from range({rows}) r(i)")
        conn.execute("commit")
        warehouse.settle(conn)
        counts.append(groups())
    conn.execute("delete from t where day = 2 and v like 'x1%'")
    warehouse.settle(conn, compact=compact_after_delete)
    counts.append(groups())
    merging_after = conn.execute("select current_setting('max_vacuum_tasks')").fetchone()[0]
    conn.close()
    return counts, merging_after


def test_appending_a_day_rewrites_no_earlier_row_group_and_a_delete_compacts(tmp_path):
    """DuckDB 1.5.5's checkpoint merges adjacent part-filled row groups (max_vacuum_tasks, 100 by default): with
    its defaults the second day's 70,000 rows were merged with the first day's 20,000 (rewriting them), so on a
    long history each day's commit rewrote older rows. A run's connections merge none on append, and merge
    after a delete when asked (a rebuilt window)."""
    from pipelines.lib import warehouse

    days = [20_000, 70_000, 70_000, 70_000]  # each commit's rows land in row groups of their own (under 122,880)
    assert row_groups_after_days(tmp_path / "a", {}, days) == ([1, 1, 2, 3, 3], 100)  # DuckDB's default merges
    assert row_groups_after_days(tmp_path / "b", warehouse.CONNECTION_CONFIG, days) == ([1, 2, 3, 4, 4], 0)
    # the compacting checkpoint merges, then sets merging back off for the rest of the connection's run
    assert row_groups_after_days(tmp_path / "c", warehouse.CONNECTION_CONFIG, days, compact_after_delete=True) \
        == ([1, 2, 3, 4, 3], 0)


def test_no_connection_draws_duckdbs_own_progress_bar(tmp_path):
    # DuckDB's Python client draws a progress bar on standard output for any statement over 2 s, terminal or not: a
    # nightly job's log filled with carriage-return updates, drawn over the CLI's own line (bench: a 5M-request day).
    # A new interpreter, as a user's: under pytest's captured output DuckDB starts with the bar off anyway.
    script = """
import sys, duckdb
from pipelines.lib import warehouse
setting = "select current_setting('enable_progress_bar')"
print(duckdb.connect().execute(setting).fetchall()[0][0])  # DuckDB's own default
with warehouse.connect(sys.argv[1]) as conn:
    print(conn.execute(setting).fetchall()[0][0])
with warehouse.connect(sys.argv[1], read_only=True) as conn:  # `cachemeter sql`, the report
    print(conn.execute(setting).fetchall()[0][0])
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "w.duckdb")], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "False"]


def test_open_for_reading_names_what_db_is_when_it_is_not_a_warehouse(tmp_path):
    from pipelines.lib import warehouse

    (tmp_path / "folder").mkdir()
    (tmp_path / "text.duckdb").write_text("not a database\n")
    duckdb.connect(str(tmp_path / "plain.duckdb")).execute("create table t (x int)").close()
    for name, message in (("folder", "is a folder"), ("text.duckdb", "is not a DuckDB warehouse file"),
                          ("plain.duckdb", "without cachemeter's tables (no core.usage)")):
        with pytest.raises(warehouse.NotAWarehouseError, match=message.replace("(", r"\(").replace(")", r"\)")):
            warehouse.open_for_reading(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        warehouse.open_for_reading(tmp_path / "none.duckdb")
    # an SQLite file: DuckDB tried to download its SQLite reader ("Failed to download extension ...")
    import sqlite3
    with sqlite3.connect(tmp_path / "lake.db") as lite:
        lite.execute("create table t (x)")
    with pytest.raises(warehouse.NotAWarehouseError, match="is an SQLite database, not a DuckDB warehouse file"):
        warehouse.open_for_reading(tmp_path / "lake.db")
    with pytest.raises(warehouse.NotAWarehouseError, match="is an SQLite database"):  # `cachemeter sql` opens so
        warehouse.connect(tmp_path / "lake.db", read_only=True)
    with pytest.raises(ValueError, match="is an SQLite database: give a cachemeter warehouse"):
        warehouse.refuse_foreign_file(tmp_path / "lake.db")
    with pytest.raises(ValueError, match="is not a DuckDB file"):
        warehouse.refuse_foreign_file(tmp_path / "text.duckdb")
    for fine in ("plain.duckdb", "none.duckdb"):  # a DuckDB file, or none yet: a run may go on
        warehouse.refuse_foreign_file(tmp_path / fine)
    # an empty file (`touch w.duckdb`): reading names it (DuckDB said "not a valid DuckDB database file"); a run
    # removes it and builds the warehouse there
    (tmp_path / "empty.duckdb").touch()
    with pytest.raises(warehouse.NotAWarehouseError, match="is an empty file, not a warehouse: `cachemeter run --db"):
        warehouse.connect(tmp_path / "empty.duckdb", read_only=True)
    with pytest.raises(warehouse.NotAWarehouseError, match="is an empty file"):
        warehouse.open_for_reading(tmp_path / "empty.duckdb")
    warehouse.refuse_foreign_file(tmp_path / "empty.duckdb")
    assert not (tmp_path / "empty.duckdb").exists()
    warehouse.connect(tmp_path / "empty.duckdb").close()  # the run's own open now creates it
    assert (tmp_path / "empty.duckdb").stat().st_size > 0
    with pytest.raises(warehouse.NotAWarehouseError, match="is a folder"):  # `cachemeter sql --db <folder>`
        warehouse.connect(tmp_path / "folder", read_only=True)
    with pytest.raises(ValueError, match="is a folder: give the warehouse file to create or use, e.g. "):  # a run
        warehouse.refuse_foreign_file(tmp_path / "folder")  # (DuckDB: "Could not read from file ...: Is a directory")
    # someone else's file with a core.usage: named, not a Catalog Error from whichever table a command reads first
    with duckdb.connect(str(tmp_path / "partial.duckdb")) as conn:
        conn.execute("create schema core; create table core.usage (x int)")
    with pytest.raises(warehouse.NotAWarehouseError, match="has core.usage but not core.usage_costs, core.usage_priced, "
                       "core.quarantine, stage.pending_days, marts.daily_savings"):
        warehouse.open_for_reading(tmp_path / "partial.duckdb")
    # a warehouse a run prepared has every table readers read
    warehouse.prepare(duckdb.connect(str(tmp_path / "prepared.duckdb"))).close()
    warehouse.open_for_reading(tmp_path / "prepared.duckdb").close()


def test_readers_are_told_which_days_are_staged_but_not_built():
    from pipelines.lib import warehouse

    conn = warehouse.prepare(duckdb.connect(":memory:"))
    assert warehouse.unbuilt_days_note(conn) is None
    conn.execute("insert into stage.pending_days (day, staged_at) values ('2026-11-20', now())")
    assert warehouse.unbuilt_days_note(conn).startswith("2026-11-20 staged but not built yet")
    conn.execute("insert into stage.pending_days (day, staged_at, dependent) values ('2026-11-22', now(), true), "
                 "('2026-11-20', now(), false)")
    assert warehouse.unbuilt_days_note(conn).startswith("2 UTC days from 2026-11-20 to 2026-11-22 staged but not built")


def test_days_staged_since_the_snapshot_are_recorded_beside_the_warehouse_until_one_is_published(tmp_path):
    # a snapshot holds stage.pending_days as a run published it: days a later run staged (and died) are in the file
    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    record = tmp_path / "w.unbuilt.json"
    with warehouse.connect(db) as conn:
        assert warehouse.record_unbuilt_days(conn, db) == [] and not record.exists()
        conn.execute("insert into stage.pending_days (day, staged_at) values ('2026-11-21', now()), ('2026-11-20', now())")
        assert warehouse.record_unbuilt_days(conn, db) == ["2026-11-20", "2026-11-21"]
        assert json.loads(record.read_text()) == {"unbuilt_days": ["2026-11-20", "2026-11-21"]}
        reader = warehouse.prepare(duckdb.connect(":memory:"))  # a snapshot without pending days
        assert warehouse.unbuilt_days_note(reader) is None
        assert warehouse.unbuilt_days_note(reader, db).startswith("2 UTC days from 2026-11-20 to 2026-11-21 staged")
        assert warehouse.unbuilt_days_note(reader, "ducklake:sqlite:/x.sqlite") is None  # a lake's readers read it
        record.write_text("{not json")
        assert "w.unbuilt.json cannot be read: days may be staged but not built yet" in warehouse.unbuilt_days_note(reader, db)
        warehouse.publish_snapshot(conn, db)
        assert not record.exists() and (tmp_path / "w.snapshot.duckdb").exists()
        conn.execute("delete from stage.pending_days")
        record.write_text("{}")
        assert warehouse.record_unbuilt_days(conn, db) == [] and not record.exists()  # none pending: no file
    assert warehouse.unbuilt_days_path("warehouse/cachemeter.duckdb") == Path("warehouse/cachemeter.unbuilt.json")


def test_each_warehouse_in_a_folder_keeps_its_own_report(tmp_path):
    from pipelines.lib import warehouse

    # the default name keeps the documented warehouse/report.html; any other is named for its warehouse (two
    # warehouses in one folder overwrote one report.html)
    assert warehouse.report_path(tmp_path / "cachemeter.duckdb") == tmp_path / "report.html"
    assert warehouse.report_path(tmp_path / "team-a.duckdb") == tmp_path / "team-a.report.html"
    # names sharing a stem keep theirs apart: a DuckLake catalog beside the default warehouse, a.duckdb beside a.db
    assert warehouse.report_path(f"ducklake:{tmp_path / 'cachemeter.ducklake'}") == tmp_path / "cachemeter.ducklake.report.html"
    assert warehouse.report_path(f"ducklake:sqlite:{tmp_path / 'lake.sqlite'}") == tmp_path / "lake.sqlite.report.html"
    assert warehouse.report_path(tmp_path / "a.db") == tmp_path / "a.db.report.html"
    # no file to go beside: the working directory, named for the database (every PostgreSQL lake wrote report.html)
    assert warehouse.report_path("ducklake:postgres:dbname=x") == Path.cwd() / "x.report.html"


def test_warehouses_whose_names_share_a_stem_publish_apart(tmp_path):
    from pipelines.lib import warehouse

    # a.duckdb and a.db both published a.snapshot.duckdb: each run replaced the other's, and readers of one
    # warehouse read the other
    assert warehouse.snapshot_path(tmp_path / "a.duckdb") == tmp_path / "a.snapshot.duckdb"
    assert warehouse.snapshot_path(tmp_path / "a.db") == tmp_path / "a.db.snapshot.duckdb"
    assert warehouse.snapshot_path(tmp_path / "a") == tmp_path / "a.snapshot.duckdb"
    assert warehouse.snapshot_path(tmp_path / "A.DUCKDB") == tmp_path / "A.DUCKDB.snapshot.duckdb"  # not A.duckdb's
    assert warehouse.snapshot_path(tmp_path / ".duckdb") == tmp_path / ".duckdb.snapshot.duckdb"


def test_a_run_refuses_a_warehouse_that_would_publish_over_another(tmp_path, monkeypatch):
    # a.snapshot.duckdb was replaced by a.duckdb's snapshot (the warehouse survived only as the .spare, which the
    # next publish overwrote); a and a.duckdb in one folder shared a.snapshot.duckdb and read each other's data
    from pipelines.lib import warehouse

    with pytest.raises(ValueError, match="named like a snapshot: a run of a.duckdb beside it would replace it"):
        warehouse.refuse_shared_snapshot(tmp_path / "a.snapshot.duckdb")
    duckdb.connect(str(tmp_path / "a.duckdb")).close()
    with pytest.raises(ValueError, match=r"a and a.duckdb in one folder would publish one snapshot \(a.snapshot.duckdb\)"):
        warehouse.refuse_shared_snapshot(tmp_path / "a")
    (tmp_path / "b").mkdir()  # a folder (or any non-DuckDB file) beside b.duckdb shares nothing
    warehouse.refuse_shared_snapshot(tmp_path / "b.duckdb")
    warehouse.refuse_shared_snapshot(tmp_path / "a.duckdb")  # no file named a beside it
    duckdb.connect(str(tmp_path / "c")).close()
    with pytest.raises(ValueError, match="c.duckdb and c in one folder"):
        warehouse.refuse_shared_snapshot(tmp_path / "c.duckdb")
    # c.duckdb publishes c.snapshot.duckdb, c.duckdb.duckdb c.duckdb.snapshot.duckdb: apart (found by a break test,
    # which had it refused only when c.duckdb.duckdb was created second)
    duckdb.connect(str(tmp_path / "c.duckdb")).close()
    warehouse.refuse_shared_snapshot(tmp_path / "c.duckdb.duckdb")
    # files another warehouse's run replaces or deletes: its report, DuckDB's write-ahead log, a snapshot being written
    for name, like in (("w.report.html", "a warehouse's report"), ("report.html", "a warehouse's report"),
                       ("u.duckdb.wal", "DuckDB's write-ahead log"), ("v.snapshot.duckdb.partial", "a snapshot"),
                       ("x.unbuilt.json", "a warehouse's record of unbuilt days")):
        with pytest.raises(ValueError, match=f"the warehouse file {name} is named like {like}"):
            warehouse.refuse_shared_snapshot(tmp_path / name)
    # a run is refused before it opens the file; reading a snapshot by name is not
    from pipelines import runner
    for name in ("CACHEMETER_LOGS", "CACHEMETER_DB"):
        monkeypatch.setenv(name, "before")
    with pytest.raises(ValueError, match="named like a snapshot"):
        runner.configure(tmp_path / "logs", tmp_path / "x.snapshot.duckdb", None)
    assert os.environ["CACHEMETER_DB"] == os.environ["CACHEMETER_LOGS"] == "before"  # nothing configured
    warehouse.connect(tmp_path / "a.duckdb", read_only=True).close()


def _reader_holding(db: Path, seconds: float) -> subprocess.Popen:
    """A second process that opens ``db`` read-only (DuckDB's lock: a writer cannot open it) for ``seconds``."""
    reader = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); print('open', flush=True); "
        "time.sleep(float(sys.argv[2])); c.close()"), str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip() == "open"
    return reader


def test_a_run_waits_out_a_reader_that_holds_the_warehouse_for_a_moment(tmp_path):
    """`cachemeter doctor` and the pending-days sensor open the warehouse itself read-only for tens of
    milliseconds; a nightly run (--wait 0) starting in that moment was refused "in use by PID ..."."""
    import time

    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    duckdb.connect(str(db)).close()
    reader = _reader_holding(db, 0.5)
    started = time.monotonic()
    with warehouse.held_for_run(db, 0) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
    assert 0.3 < time.monotonic() - started < warehouse.BRIEF_HOLD_SECONDS
    reader.wait()
    held = _reader_holding(db, 30)
    try:
        started = time.monotonic()
        with pytest.raises(warehouse.WarehouseBusyError) as refused:
            with warehouse.held_for_run(db, 0):
                pass
        assert time.monotonic() - started >= warehouse.BRIEF_HOLD_SECONDS
    finally:
        held.kill()
        held.wait()
    # the holder is named by its command line (/proc), not only by its interpreter's path
    assert f"is in use by PID {held.pid} ({sys.executable} -c import duckdb, sys, time;" in str(refused.value)


def test_a_holder_is_named_by_the_command_its_user_typed():
    from pipelines.lib import warehouse

    python = "/srv/app/.venv/bin/python3.11"
    assert warehouse.typed_command([python, "-m", "pipelines.cli", "run", "--db", "w.duckdb"]) == \
        "cachemeter run --db w.duckdb"
    assert warehouse.typed_command([python, "/srv/app/.venv/bin/cachemeter", "run"]) == "cachemeter run"
    assert warehouse.typed_command(["/usr/local/bin/cachemeter", "doctor"]) == "cachemeter doctor"
    assert warehouse.typed_command([python, "-c", "x" * 300]) == (python + " -c " + "x" * 300)[:157] + "..."
    assert warehouse.typed_command([]) is None


def _other_process_opens(db: Path) -> str:
    """What a second process gets when it opens ``db`` for writing: "opened", or DuckDB's error's first line."""
    done = subprocess.run([sys.executable, "-c", (
        "import duckdb, sys\ntry:\n    duckdb.connect(sys.argv[1]).close(); print('opened')\n"
        "except duckdb.Error as e:\n    print(str(e).splitlines()[0])"), str(db)], capture_output=True, text=True)
    return done.stdout.strip()


def test_publishing_the_snapshot_keeps_the_warehouse_locked_for_the_rest_of_the_run(tmp_path):
    """A break test: DuckDB's lock is a POSIX record lock, which the system drops when the process closes any
    descriptor of the file; the snapshot copy opened and closed the warehouse, so for the rest of the run (the
    report, the webhook's retries) a second `cachemeter run --wait 120` opened it at once and wrote beside the first
    (it failed on the write-ahead log's lock, or ran through and lost a delivery row of the first)."""
    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    for reuse in (False, False, True):  # whole copies, then the spare (the copy before the last) brought up to date
        with warehouse.held_for_run(db) as conn:
            conn.execute("create or replace table t as select range as n from range(100000)")
            published = warehouse.publish_snapshot(conn, db)
            assert published["spare_reused"] is reuse
            assert "Could not set lock" in _other_process_opens(db)
        assert _other_process_opens(db) == "opened"
        assert warehouse.kept_descriptor(db) is None
    with duckdb.connect(str(tmp_path / "w.snapshot.duckdb"), read_only=True) as snapshot:
        assert snapshot.execute("select count(*), sum(n) from t").fetchone() == (100000, 4999950000)


def test_a_ducklake_target_that_names_no_catalog_is_refused_naming_the_forms():
    # a break test: CACHEMETER_DB=ducklake: ended in DuckDB's "Default secret was not found"
    from pipelines.lib import lake

    for target in ("ducklake:", "ducklake:sqlite:", "ducklake:postgres: "):
        with pytest.raises(lake.LakeError, match=r"names no DuckLake catalog: give ducklake:<file>.ducklake, "
                                                 r"ducklake:sqlite:<file> or ducklake:postgres:<conninfo>"):
            lake.catalog_of(target)
    assert lake.catalog_of("ducklake:sqlite:/a/b.sqlite") == "sqlite:/a/b.sqlite"


def test_targets_a_run_cannot_keep_are_refused_before_anything_is_written(tmp_path):
    # break tests: `ducklake:postgresql:...` built a DuckDB catalog file named "postgresql:host=..." in the working
    # folder, then failed on a missing extension; under a folder named with a "?" every commit failed, DuckDB looking
    # for its write-ahead log in a folder that does not exist ("/a/q.wal?m/w.duckdb")
    from pipelines.lib import lake, warehouse

    with pytest.raises(lake.LakeError, match=r"'postgresql:' is no catalog kind cachemeter opens") as refused:
        warehouse.resolved("ducklake:postgresql:host=x password=secret dbname=y")
    assert "secret" not in str(refused.value) and "password=***" in str(refused.value)  # the typo's password too
    for target in (tmp_path / "q?m" / "w.duckdb", f"ducklake:{tmp_path / 'q?m' / 'c.ducklake'}"):
        with pytest.raises(ValueError, match=r"in a folder whose path holds '\?'"):
            warehouse.resolved(target)
    assert warehouse.resolved(tmp_path / "w*h?.duckdb") == str(tmp_path / "w*h?.duckdb")  # in the name: works
    assert warehouse.resolved(f"ducklake:sqlite:{tmp_path / 'q?m' / 'c.sqlite'}").endswith("q?m/c.sqlite")
    assert not list(tmp_path.iterdir())


def test_a_postgresql_lake_reports_under_its_database_name_and_its_password_is_never_shown():
    # break tests: every PostgreSQL lake run from one folder wrote the same ./report.html; a password= in the
    # conninfo was printed by the run's summary, its errors and doctor
    from pipelines.lib import lake, warehouse

    for target, report, shown in (
            ("ducklake:postgres:host=a port=1 user=u password=secret dbname=lake1", "lake1.report.html",
             "ducklake:postgres:host=a port=1 user=u password=*** dbname=lake1"),
            ("ducklake:postgres:host=a password='se cret' dbname=x", "x.report.html",
             "ducklake:postgres:host=a password=*** dbname=x"),
            ("ducklake:postgres:postgresql://u:pw@h:5432/lake2", "lake2.report.html",
             "ducklake:postgres:postgresql://u:***@h:5432/lake2"),
            ("ducklake:postgres:host=a user=team", "team.report.html", "ducklake:postgres:host=a user=team")):
        assert warehouse.report_path(target) == Path.cwd() / report
        assert lake.redacted(target) == shown


def test_an_as_of_is_a_snapshot_id_only_when_it_is_ascii_digits():
    from pipelines.lib import lake

    assert lake.snapshot_option("12") == "SNAPSHOT_VERSION 12"
    assert lake.snapshot_option("²") == "SNAPSHOT_TIME '²'"  # DuckDB then refuses the time in one line
    assert lake.snapshot_option("2026-11-20 08:00:00+00") == "SNAPSHOT_TIME '2026-11-20 08:00:00+00'"
