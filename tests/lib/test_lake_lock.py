"""pipelines/lib/lake_lock.py: one staging at a time on a lake whose catalog several processes write.

A break test: two `cachemeter run`s started together on a PostgreSQL-catalog lake both staged a new log file (its
rows twice in core.usage, two stage.files rows), and every later run failed its rows-in check."""

import subprocess
import sys

import pytest

from pipelines.lib import lake_lock
from tests.conftest import REPO

HOLD = ("import sys, time; sys.path.insert(0, sys.argv[2]); from pipelines.lib import lake_lock\n"
        "with lake_lock.held(sys.argv[1]):\n    print('held', flush=True); time.sleep(120)")


def holding(target: str) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, target, str(REPO)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def assert_one_holder_at_a_time(target: str) -> None:
    holder = holding(target)
    try:
        with pytest.raises(lake_lock.LakeBusyError, match=rf"the warehouse .* is being staged into by PID {holder.pid} "
                                                           r"on .*; try again when it ends, or pass --wait SECONDS"):
            with lake_lock.held(target, wait_seconds=0.3, poll_seconds=0.1):
                pass
    finally:
        holder.kill()
        holder.wait()
    with lake_lock.held(target):  # let go with its process
        with lake_lock.held(target):  # and taken once per process: the ingest asset inside a cachemeter run
            pass


def test_an_sqlite_catalog_is_staged_into_by_one_process_at_a_time(tmp_path):
    target = f"ducklake:sqlite:{tmp_path / 'lake.sqlite'}"
    assert lake_lock.needs_lock(target) and not lake_lock.needs_lock(f"ducklake:{tmp_path / 'c.ducklake'}")
    assert not lake_lock.needs_lock(str(tmp_path / "w.duckdb"))  # DuckDB's own lock holds these
    assert_one_holder_at_a_time(target)


def test_a_postgresql_catalog_is_staged_into_by_one_process_at_a_time():
    from tests.deploy.test_postgres_instance import PASSWORD, postgres_server

    with postgres_server() as server:
        target = f"ducklake:postgres:host=127.0.0.1 port={server.port} user=dagster password={PASSWORD} dbname=dagster"
        assert_one_holder_at_a_time(target)


def test_a_run_on_a_held_lake_stops_naming_the_holder(tmp_path):
    from tests.test_cli import cachemeter

    target = f"ducklake:sqlite:{tmp_path / 'lake.sqlite'}"
    holder = holding(target)
    try:
        done = cachemeter("run", "--db", target, "--logs", str(tmp_path), cwd=tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 1 and f"is being staged into by PID {holder.pid}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
