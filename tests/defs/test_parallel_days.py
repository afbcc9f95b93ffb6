"""Days built by several processes at once on a PostgreSQL-catalog DuckLake (pipelines/parallel_days.py):
the tables of a serial build, readers answered from committed snapshots, write conflicts run again."""

import threading
from datetime import date

import dagster as dg
import duckdb
import pytest
from dagster_duckdb import DuckDBResource

from pipelines import parallel_days, runner
from pipelines.defs.resources import warehouse_connection
from pipelines.lib import lake, warehouse
from tests.conftest import TABLES, run_pipeline, snapshot
from tests.defs.test_pipeline import hit_rate_logs

PER_DAY = "select day, count(*), sum(cost_usd) from core.usage_costs group by day"
SAVINGS = "select day, sum(requests), sum(savings_usd) from marts.daily_savings group by day"


def test_chunks_cut_a_range_into_runs_of_consecutive_days():
    d = lambda n: date(2026, 11, n)  # noqa: E731
    assert parallel_days.chunks(d(1), d(5), 2) == [(d(1), d(3)), (d(4), d(5))]
    assert parallel_days.chunks(d(1), d(1), 4) == [(d(1), d(1))]
    assert parallel_days.chunks(d(1), d(6), 3) == [(d(1), d(2)), (d(3), d(4)), (d(5), d(6))]


def test_only_a_postgres_catalog_builds_in_several_processes(monkeypatch, tmp_path):
    monkeypatch.setenv("CACHEMETER_PARALLEL", "4")
    assert parallel_days.workers_for("ducklake:postgres:host=127.0.0.1 dbname=x") == 4
    for serial in (str(tmp_path / "w.duckdb"), f"ducklake:{tmp_path / 'c.ducklake'}", f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"):
        assert parallel_days.workers_for(serial) == 1, serial
    monkeypatch.setenv("CACHEMETER_PARALLEL", "0")
    with pytest.raises(ValueError, match="CACHEMETER_PARALLEL"):
        parallel_days.workers_for("ducklake:postgres:dbname=x")


def test_the_sensor_requests_chunk_runs_then_the_window_run_once_every_chunk_succeeded():
    from datetime import datetime, timezone

    from pipelines.defs.nightly.jobs import DAY_LOCAL_ASSETS, PUBLISH_ASSETS, WINDOW_ASSETS

    ranges = [(date(2026, 11, 1), date(2026, 11, 5), 5, datetime(2026, 11, 6, tzinfo=timezone.utc))]
    key = "2026-11-01..2026-11-05@2026-11-06T00:00:00+00:00#run1"
    done = {key: 1}
    asked = parallel_days.run_requests(ranges, 2, "run1", "pending_days_sensor", lambda k: done.get(k, 0))
    assert [(r.run_key, r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"],
             r.tags[parallel_days.RANGE_TAG]) for r in asked] == [
        (f"{key}:days 2026-11-01..2026-11-03", "2026-11-01", "2026-11-03", key),
        (f"{key}:days 2026-11-04..2026-11-05", "2026-11-04", "2026-11-05", key)]
    assert all(r.asset_selection == [dg.AssetKey(k) for k in DAY_LOCAL_ASSETS] for r in asked)
    done[key] = 2  # both chunk runs succeeded: the next tick adds the window run over the whole range
    *chunk_runs, window = parallel_days.run_requests(ranges, 2, "run1", "pending_days_sensor", lambda k: done.get(k, 0))
    assert [r.run_key for r in chunk_runs] == [r.run_key for r in asked]  # the same keys: Dagster does not run them again
    assert (window.run_key, window.tags["dagster/asset_partition_range_start"],
            window.tags["dagster/asset_partition_range_end"]) == (f"{key}:window", "2026-11-01", "2026-11-05")
    assert window.asset_selection == [dg.AssetKey(k) for k in WINDOW_ASSETS + PUBLISH_ASSETS]


def _read_committed(target: str, seen: list, errors: list, stop: threading.Event) -> None:
    """Poll the lake like a dashboard: both figures of each answer from one snapshot (one transaction).
    Errors before the first answer (no lake yet: ``lake.LakeError``; no tables yet) are expected; any after it is kept."""
    from pipelines.lib import lake

    while not stop.is_set():
        try:
            with warehouse.connect(target, read_only=True) as conn:
                conn.execute("begin")
                seen.append((conn.execute(PER_DAY).fetchall(), conn.execute(SAVINGS).fetchall()))
                conn.execute("commit")
        except (duckdb.Error, lake.LakeError) as exc:
            if seen:
                errors.append(str(exc))
        stop.wait(0.05)


def test_two_processes_build_the_days_of_a_postgres_lake_as_a_serial_build(tmp_path, monkeypatch):
    from tests.deploy.test_postgres_instance import PASSWORD, postgres_server

    logs = tmp_path / "logs"
    hit_rate_logs(logs, broken_from=date(2026, 11, 4), days=6, per_day=20)
    serial = snapshot(run_pipeline(tmp_path / "file", logs))
    assert len(serial["core.usage"]) == 120 and len(serial["marts.daily_savings"]) == 6
    monkeypatch.chdir(tmp_path)  # a PostgreSQL catalog has no file to write its report beside: the working directory
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    monkeypatch.setenv("CACHEMETER_PARALLEL", "2")
    with postgres_server() as server:
        target = f"ducklake:postgres:host=127.0.0.1 port={server.port} user=dagster dbname=dagster"
        seen, errors, stop = [], [], threading.Event()
        reader = threading.Thread(target=_read_committed, args=(target, seen, errors, stop))
        reader.start()
        try:
            run_pipeline(tmp_path / "pg", logs, db=target, data_path=str(tmp_path / "parquet"))
            built = snapshot(target)
            # every day rebuilt again by two processes at once: each rewrites its days of the same tables
            result = runner.run_pipeline(instance=dg.DagsterInstance.ephemeral(), all_days=True)
            rebuilt = snapshot(target)
        finally:
            stop.set()
            reader.join()
        with warehouse.connect(target, read_only=True) as conn:
            final_costs, final_savings = dict_of(conn.execute(PER_DAY).fetchall()), dict_of(conn.execute(SAVINGS).fetchall())
            # the parallel step ran as two daily runs of three days each: their commits are in the catalog
            writers = conn.execute("select count(*) from ducklake_snapshots('lake') where changes['tables_inserted_into'] "
                                   "is not null").fetchone()[0]
        print(f"parallel rebuild: {result.retried_steps} step(s) run again after a conflict; "
              f"{len(seen)} reads during the runs; {writers} snapshots with inserts")

    assert (result.first_day, result.last_day) == (date(2026, 11, 1), date(2026, 11, 6))
    for table in TABLES:
        assert built[table] == serial[table], table
        assert rebuilt[table] == serial[table], table
    # a reader during the writes saw whole committed days: a day's cost rows all or none, its savings the final ones
    assert len(seen) > 5 and errors == []
    assert len(final_costs) == 6
    for costs, savings in seen:
        for day, *figures in costs:
            assert tuple(figures) == final_costs[day], (day, figures)
        for day, *figures in savings:
            assert tuple(figures) == final_savings[day], (day, figures)
    assert writers > 6


def dict_of(rows: list[tuple]) -> dict:
    return {day: tuple(figures) for day, *figures in rows}


def test_a_write_conflict_on_a_postgres_lake_asks_dagster_to_run_the_step_again(tmp_path, monkeypatch):
    from tests.deploy.test_postgres_instance import PASSWORD, postgres_server

    monkeypatch.chdir(tmp_path)  # a PostgreSQL catalog has no file to write its report beside: the working directory
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with postgres_server() as server:
        target = f"ducklake:postgres:host=127.0.0.1 port={server.port} user=dagster dbname=dagster"
        monkeypatch.setenv(lake.DATA_PATH_ENV, str(tmp_path / "parquet"))
        with warehouse.connect(target) as conn:  # creates the tables; two days built before
            conn.execute("insert into marts.prefix_families (day, provider) select '2026-11-01'::date + (i % 2)::int, "
                         "'anthropic' from range(100) r(i)")
        other = duckdb.connect(":memory:", config=lake.NO_AUTOLOAD)  # another writer (its own DuckDB instance)
        lake.attach(other, target)
        rewrite = ("delete from marts.prefix_families where day = $day; "
                   "insert into marts.prefix_families (day, provider) values ($day, 'openai')")
        with pytest.raises(dg.RetryRequested) as asked:
            with warehouse_connection(DuckDBResource(database=target)) as conn:
                with warehouse.transaction(conn):
                    conn.execute("delete from marts.prefix_families where day = '2026-11-02'")
                    conn.execute("insert into marts.prefix_families (day, provider) values ('2026-11-02', 'openai')")
                    other.execute("begin")  # the other writer rewrites another day and commits first
                    for text in rewrite.split("; "):
                        other.execute(text, {"day": date(2026, 11, 1)})
                    other.execute("commit")
        other.close()
        assert asked.value.max_retries == 8 and 1 <= asked.value.seconds_to_wait <= 5
        assert "conflict" in str(asked.value.__cause__).lower()
        with warehouse.connect(target, read_only=True) as conn:  # the loser wrote nothing; its retry writes its day
            assert conn.execute("select day, provider, count(*) from marts.prefix_families group by all order by all"
                                ).fetchall() == [(date(2026, 11, 1), "openai", 1), (date(2026, 11, 2), "anthropic", 50)]


def test_a_worker_that_dies_is_named_with_its_days_not_an_unexpected_error(monkeypatch):
    # a break test: a --parallel worker killed (kill -9, the OOM killer) ended the run in "BrokenProcessPool: A process
    # in the process pool was terminated abruptly ... an unexpected error, please report it"
    from concurrent.futures.process import BrokenProcessPool
    from datetime import date

    from pipelines import parallel_days, runner

    class Died:
        def result(self):
            raise BrokenProcessPool("A process in the process pool was terminated abruptly")

    class Pool:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, *args):
            return Died()

    monkeypatch.setattr(parallel_days, "ProcessPoolExecutor", Pool)
    with pytest.raises(runner.PipelineError, match=r"^a process building days 2026-11-01 \.\. 2026-11-04 died \(killed, "
                                                   r"or out of memory\?\); the days stay pending: run again"):
        parallel_days.build_day_local([(date(2026, 11, 1), date(2026, 11, 4))], 2)
