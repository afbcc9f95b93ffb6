"""Crashes and concurrent readers: SIGKILL at controlled points, and queries while a run writes."""

import json
import signal
import subprocess
import sys
from datetime import date

import pytest

from tests.conftest import snapshot
from tests.defs.test_pipeline import hit_rate_logs


def run_cli(args, cwd, extra_env=None, timeout=300):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reliability") / "logs"
    hit_rate_logs(folder, broken_from=date(2026, 11, 8))
    # split into three files so a run can die between files
    lines = (folder / "usage.jsonl").read_text().splitlines()
    (folder / "usage.jsonl").unlink()
    for n in range(3):
        (folder / f"part-{n}.jsonl").write_text("\n".join(lines[n::3]) + "\n")
    return folder


@pytest.fixture(scope="module")
def clean_tables(logs, tmp_path_factory):
    db = tmp_path_factory.mktemp("clean") / "w.duckdb"
    assert run_cli(["run", "--logs", str(logs), "--db", str(db)], db.parent).returncode == 0
    return snapshot(db)


@pytest.mark.parametrize("point", ["stage:mid_file", "stage:after_file", "window:costs/usage_costs__insert_window",
                                   "window:marts/daily_savings__insert_window"])
def test_sigkill_then_rerun_gives_exactly_the_tables_of_a_clean_run(logs, clean_tables, tmp_path, point):
    db = tmp_path / "w.duckdb"
    killed = run_cli(["run", "--logs", str(logs), "--db", str(db)], tmp_path, {"CACHEMETER_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    again = run_cli(["run", "--logs", str(logs), "--db", str(db)], tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert snapshot(db) == clean_tables


def test_queries_answer_from_the_snapshot_while_another_process_writes(logs, tmp_path):
    db = tmp_path / "w.duckdb"
    assert run_cli(["run", "--logs", str(logs), "--db", str(db)], tmp_path).returncode == 0
    # a second process takes the warehouse's single-writer lock and sits in an open transaction
    writer = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); c.execute('begin transaction'); "
        "c.execute('delete from marts.daily_savings'); print('locked', flush=True); time.sleep(60)"), str(db)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "locked"
        answered = run_cli(["sql", "select count(*) as days from marts.daily_savings", "--db", str(db), "--format", "json"],
                           tmp_path)
        blocked = run_cli(["sql", "select 1", "--db", str(db), "--live"], tmp_path)
    finally:
        writer.kill()
        writer.wait()
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout) == [{"days": 10}]
    assert blocked.returncode == 1 and "lock" in blocked.stderr.lower()


def hold_warehouse(db):
    """A second process that holds the warehouse's write lock until killed."""
    writer = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); time.sleep(120)"),
        str(db)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "locked"
    return writer


def test_a_run_on_a_held_warehouse_waits_a_bounded_time_then_stops_with_one_line_and_loses_nothing(
        logs, clean_tables, tmp_path):
    import time

    db = tmp_path / "w.duckdb"
    assert run_cli(["run", "--logs", str(logs), "--db", str(db)], tmp_path).returncode == 0
    writer = hold_warehouse(db)
    try:
        refused = run_cli(["run", "--logs", str(logs), "--db", str(db)], tmp_path)
        started = time.monotonic()
        waited = run_cli(["run", "--logs", str(logs), "--db", str(db), "--wait", "3"], tmp_path)
        waited_seconds = time.monotonic() - started
    finally:
        writer.kill()
        writer.wait()
    for result in (refused, waited):
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 1 and len(lines) == 1, result.stderr[-2000:]
        assert f"is in use by PID {writer.pid} ({sys.executable} -c import duckdb" in lines[0], lines[0]
        assert "Traceback" not in result.stderr
    assert "after waiting 3 s" in waited.stderr and waited_seconds >= 3
    assert run_cli(["run", "--logs", str(logs), "--db", str(db)], tmp_path).returncode == 0
    assert snapshot(db) == clean_tables


def test_readers_of_the_snapshot_are_told_of_days_a_killed_run_staged(logs, tmp_path):
    """A break test: a run killed after staging a new file left the snapshot of the run before, which holds no pending
    days, and the report and export said nothing (README: "when days are staged but not built yet (a run failed, or
    one is under way) they say which"). Staging now records the days beside the warehouse until a snapshot holds them."""
    import shutil

    folder = tmp_path / "logs"
    folder.mkdir()
    for n in range(2):
        shutil.copy(logs / f"part-{n}.jsonl", folder)
    db = tmp_path / "w.duckdb"
    assert run_cli(["run", "--logs", str(folder), "--db", str(db)], tmp_path).returncode == 0
    assert not (tmp_path / "w.unbuilt.json").exists()
    shutil.copy(logs / "part-2.jsonl", folder)
    killed = run_cli(["run", "--logs", str(folder), "--db", str(db)], tmp_path,
                     {"CACHEMETER_KILL_AT": "window:costs/usage_costs__insert_window"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    # part-2 holds every third request of each of the ten days (hit_rate_logs): all ten are staged, none built
    days = json.loads((tmp_path / "w.unbuilt.json").read_text())["unbuilt_days"]
    assert days == [f"2026-11-{d:02d}" for d in range(1, 11)]
    span = "10 UTC days from 2026-11-01 to 2026-11-10"
    # sql answered from the stale snapshot without a word (a break test)
    for args in (["report", "--out", str(tmp_path / "r.html")], ["export", "focus", "--out", str(tmp_path / "f.csv")],
                 ["sql", "select count(*) from marts.daily_savings"]):
        read = run_cli([*args, "--db", str(db)], tmp_path)
        assert read.returncode == 0 and f"warning: {span} staged but not built yet" in read.stderr, read.stderr
    from pipelines.lib import doctor
    checked = {result.name: result for result in doctor.run_checks(db)}["snapshot"]
    assert checked.status == "warn" and f"w.snapshot.duckdb: {span} staged but not built yet" in checked.detail
    assert run_cli(["run", "--logs", str(folder), "--db", str(db)], tmp_path).returncode == 0
    assert not (tmp_path / "w.unbuilt.json").exists()  # the snapshot holds them built
    for args in (["report", "--out", str(tmp_path / "r.html")], ["sql", "select 1"]):
        read = run_cli([*args, "--db", str(db)], tmp_path)
        assert read.returncode == 0 and "staged but not built" not in read.stderr
