"""The production Dagster instance (deploy/dagster.yaml) on a real PostgreSQL server: a run is recorded
and read back from another instance, and the server the test started is gone afterwards.

The server is Debian's ``postgresql`` (installed here when missing, like Chromium for the report test),
started from a fresh cluster in a temporary folder on a free localhost port. PostgreSQL refuses to run
as root, so under root it runs as the ``postgres`` user (``runuser``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import psycopg2

from tests import system_packages
from tests.conftest import REPO
from tests.deploy.processes import alive, children_of, free_port

PASSWORD = "cachemeter-test-password"


def postgres_bin() -> Path:
    """The ``bin`` folder of the newest installed PostgreSQL server (Debian layout), installing it if missing."""
    def found() -> list[Path]:
        return sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]))

    system_packages.ensure("postgresql", lambda: bool(found()))
    return found()[-1].parent


@dataclass(frozen=True)
class Server:
    """A running test server: TCP port on 127.0.0.1, postmaster pid and its child processes at start."""

    port: int
    pid: int
    children: frozenset[int]


@contextlib.contextmanager
def postgres_server() -> Iterator[Server]:
    """A fresh cluster with user ``dagster`` (password ``PASSWORD`` over TCP) and database ``dagster``,
    stopped (``pg_ctl stop -m fast``) and deleted on exit."""
    bin_dir = postgres_bin()
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    base = Path(tempfile.mkdtemp(prefix="cachemeter-pg-"))  # not pytest's tmp: the postgres user must enter it
    data = base / "data"
    if as_postgres:
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
    (base / "pw").write_text(PASSWORD)
    if as_postgres:
        os.chown(base / "pw", user.pw_uid, user.pw_gid)
    pg_ctl = [*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data)]
    try:
        subprocess.run([*as_postgres, str(bin_dir / "initdb"), "-D", str(data), "-U", "dagster", "-E", "UTF8",
                        f"--pwfile={base / 'pw'}", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
                        "--no-instructions"], check=True, capture_output=True, timeout=120)
        port = free_port()
        options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off")
        subprocess.run([*pg_ctl, "-l", str(base / "server.log"), "-o", options, "-w", "-t", "60", "start"],
                       check=True, capture_output=True, timeout=90)
        pid = int((data / "postmaster.pid").read_text().split()[0])
        conn = psycopg2.connect(host="127.0.0.1", port=port, user="dagster", password=PASSWORD, dbname="postgres")
        conn.autocommit = True
        try:
            conn.cursor().execute("create database dagster")
        finally:
            conn.close()
        yield Server(port, pid, children_of(pid))
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*pg_ctl, "-m", "fast", "-w", "-t", "60", "stop"], capture_output=True, timeout=90)
        shutil.rmtree(base, ignore_errors=True)


@dg.asset(pool="duckdb")
def tiny_table() -> dg.MaterializeResult:
    """Three rows, in the same pool as cachemeter's warehouse-writing assets (slots live in PostgreSQL)."""
    return dg.MaterializeResult(metadata={"rows": 3})


def test_run_recorded_and_read_back_from_postgres(tmp_path, monkeypatch):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    started = time.monotonic()
    with postgres_server() as server:
        for name, value in {"DAGSTER_PG_USER": "dagster", "DAGSTER_PG_PASSWORD": PASSWORD, "DAGSTER_PG_DB": "dagster",
                            "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(server.port)}.items():
            monkeypatch.setenv(name, value)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
            assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
            assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
            concurrency = instance.get_concurrency_config()
            assert concurrency.pool_config.default_pool_limit == 1
            assert concurrency.run_queue_config.max_concurrent_runs == 1
            assert instance.run_retries_enabled and instance.run_retries_max_retries == 2
            assert instance.run_monitoring_enabled
            result = dg.materialize([tiny_table], instance=instance)
            assert result.success

        with dg.DagsterInstance.from_config(str(home)) as reader:  # a second process would see the same
            runs = reader.get_runs()
            assert [(r.run_id, r.status) for r in runs] == [(result.run_id, dg.DagsterRunStatus.SUCCESS)]
            event = reader.get_latest_materialization_event(dg.AssetKey("tiny_table"))
            assert event.run_id == result.run_id and event.asset_materialization.metadata["rows"].value == 3
            assert reader.event_log_storage.get_concurrency_info("duckdb").slot_count == 1
        with psycopg2.connect(host="127.0.0.1", port=server.port, user="dagster", password=PASSWORD,
                              dbname="dagster") as conn, conn.cursor() as cursor:
            cursor.execute("select run_id, status from runs")
            assert cursor.fetchall() == [(result.run_id, "SUCCESS")]
        assert not (home / "history").exists() and not list(home.rglob("*.db"))  # nothing went to SQLite
    assert not alive(server.pid) and not [pid for pid in server.children if alive(pid)]
    assert time.monotonic() - started < 60
