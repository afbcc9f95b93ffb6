"""pipelines/runner.py: what a run's failure says, by the step that failed."""

from types import SimpleNamespace

import pytest

from pipelines import runner


class FakeJob:
    def __init__(self, failed_steps):
        self.failed_steps = failed_steps

    def execute_in_process(self, **kwargs):
        events = [SimpleNamespace(is_step_failure=True, step_key=key, is_step_up_for_retry=False,
                                  step_failure_data=SimpleNamespace(error=SimpleNamespace(
                                      cls_name="DagsterMaxRetriesExceededError", message="Exceeded max_retries of 2",
                                      cause=None), user_failure_data=None))
                  for key in self.failed_steps]
        return SimpleNamespace(success=False, all_events=events, get_asset_check_evaluations=lambda: [])


def execute(failed_steps):
    defs = SimpleNamespace(resolve_job_def=lambda name: FakeJob(failed_steps))
    instance = SimpleNamespace(create_run_for_job=lambda *a, **k: None)
    return runner._execute(defs, "cachemeter_daily", instance, {}, "days 2026-11-21 .. 2026-11-30")


def test_a_webhook_that_stays_down_is_not_reported_as_days_that_failed():
    # the delivery step is the daily run's last, after the snapshot: every day was built and published
    with pytest.raises(runner.PipelineError) as failed:
        execute([runner.DELIVERY_STEP])
    message = str(failed.value)
    assert message.startswith("days 2026-11-21 .. 2026-11-30: built and published, but the incident notices were not")
    assert "marts.alert_deliveries" in message and "failed: Exceeded max_retries" not in message


def test_another_failed_step_names_its_cause():
    with pytest.raises(runner.PipelineError, match=r"^days 2026-11-21 .. 2026-11-30 failed: Exceeded max_retries of 2"):
        execute(["core__usage_costs"])


def without_a_warehouse(monkeypatch, execute, ranges):
    """run_pipeline with its jobs replaced by ``execute`` and ``ranges`` as the pending day ranges, no warehouse."""
    from contextlib import nullcontext

    from pipelines.defs.nightly import sensors

    monkeypatch.setattr(runner, "_execute", execute)
    monkeypatch.setattr(runner.warehouse, "held_for_run", lambda db, wait: nullcontext())
    monkeypatch.setattr(runner.warehouse, "record_unbuilt_days", lambda conn, db: [])
    monkeypatch.setattr(runner, "_clear_days_before_partitions", lambda conn: None)
    monkeypatch.setattr(sensors, "pending_ranges", lambda conn, days: ranges)
    monkeypatch.setattr(runner.side_process, "preload", lambda: None)
    monkeypatch.setenv("CACHEMETER_DB", "/nonexistent/w.duckdb")


def test_a_webhook_down_in_the_first_day_range_does_not_stop_the_next(monkeypatch):
    from datetime import date

    ranges = [(date(2026, 10, 2), date(2026, 10, 3), None, None), (date(2026, 11, 15), date(2026, 11, 15), None, None)]
    built = []

    def execute(defs, job_name, instance, tags, what, assets=None):
        if job_name == "cachemeter_daily":
            built.append(what)
            raise runner.NoticesNotDeliveredError(what)
        return 0

    without_a_warehouse(monkeypatch, execute, ranges)
    with pytest.raises(runner.NoticesNotDeliveredError, match=r"^days 2026-10-02 .. 2026-11-15: built and published"):
        runner.run_pipeline(instance=__import__("dagster").DagsterInstance.ephemeral())
    assert built == ["days 2026-10-02 .. 2026-10-03", "days 2026-11-15 .. 2026-11-15"]  # before, only the first


def test_two_runs_opening_a_new_dagster_home_at_once_both_get_its_instance(tmp_path):
    """A break test: two `cachemeter run` started together on a new DAGSTER_HOME both created its SQLite storage, and
    one stopped with "table runs already exists" (or "UNIQUE constraint failed: alembic_version.version_num"): 3 of 6
    pairs of bare `DagsterInstance.get()` failed here. Opened under the home's lock, every pair opens it. Each pair
    imports first, then opens at one signal (a file), so the two opens overlap."""
    import shutil
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    opener = ("import sys, time; from pathlib import Path; from pipelines import runner; home = Path(sys.argv[1]); "
              "(home.parent / (home.name + sys.argv[2])).touch(); "
              "[time.sleep(0.001) for _ in iter(lambda: (home.parent / (home.name + '.go')).exists(), True)]; "
              "runner.instance_of_home(home).get_runs(limit=1); print('opened')")
    for attempt in range(5):
        home = tmp_path / f"home{attempt}"  # new each time: the race is in creating the storage
        home.mkdir()
        shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
        pair = [subprocess.Popen([sys.executable, "-c", opener, str(home), f".ready{n}"], cwd=REPO,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={"PATH": "/usr/bin:/bin", "DAGSTER_HOME": str(home)}) for n in range(2)]
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"home{attempt}.ready{n}").exists() for n in range(2)) and time.monotonic() < deadline:
            time.sleep(0.01)
        (tmp_path / f"home{attempt}.go").touch()
        for process in pair:
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0 and out == "opened\n", err[-2000:]


def test_a_step_stopped_by_a_signal_says_so_not_dagsters_class_name():
    # a break test: SIGTERM while the snapshot was published printed
    # "days ... failed: dagster._core.errors.DagsterExecutionInterruptedError"
    from pipelines.defs.nightly.sensors import root_cause

    stopped = SimpleNamespace(cls_name="DagsterExecutionInterruptedError", cause=None,
                              message="dagster._core.errors.DagsterExecutionInterruptedError\n")
    assert root_cause(stopped) == "interrupted (SIGTERM or Ctrl-C) before it finished; the next run finishes its work"
    wrapped = SimpleNamespace(cls_name="DagsterExecutionStepExecutionError", cause=stopped, message="Error occurred")
    assert root_cause(wrapped) == root_cause(stopped)
    # DuckDB's Python client raises RuntimeError("Query interrupted") for a signal during a statement (a break test:
    # SIGTERM while staging printed "ingest and pricing failed: Query interrupted")
    statement = SimpleNamespace(cls_name="RuntimeError", cause=None, message="builtins.RuntimeError: Query interrupted\n")
    assert root_cause(statement) == root_cause(stopped)
    failing = SimpleNamespace(cls_name="ValueError", cause=None, message="builtins.ValueError: bad value\n")
    assert root_cause(failing) == "bad value"


def test_a_step_whose_retries_ran_out_names_why_it_asked_for_them():
    """A break test: a nightly run on a warehouse held by a CLI run failed with the notice "core__billed_costs: Exceeded
    max_retries of 5"; who held the file was only in the run log's tracebacks (the RetryRequested's cause)."""
    from pipelines.defs.nightly.sensors import root_cause

    busy = SimpleNamespace(cls_name="WarehouseBusyError", cause=None,
                           message="pipelines.lib.warehouse.WarehouseBusyError: the warehouse /w.duckdb is in use by "
                                   "PID 7210 (cachemeter run --all-days)\n")
    retried = SimpleNamespace(cls_name="RetryRequested", cause=busy,
                              message="dagster._core.definitions.events.RetryRequested: Exceeded max_retries of 5\n")
    step = SimpleNamespace(cls_name="DagsterExecutionStepExecutionError", cause=retried, message="Error occurred")
    assert root_cause(step) == ("the warehouse /w.duckdb is in use by PID 7210 (cachemeter run --all-days) "
                                "(still so after 5 retries)")


def test_notices_left_undelivered_on_a_night_with_nothing_to_build_still_let_the_summary_print(monkeypatch):
    def execute(defs, job_name, instance, tags, what, assets=None):
        if job_name == "cachemeter_publish":  # the earlier nights' notices, the webhook still down
            raise runner.NoticesNotDeliveredError(what, "1 notice(s) not delivered (last error: HTTP 503)")
        return 0

    without_a_warehouse(monkeypatch, execute, [])
    with pytest.raises(runner.NoticesNotDeliveredError) as raised:
        runner.run_pipeline(instance=__import__("dagster").DagsterInstance.ephemeral())
    assert raised.value.result == runner.RunResult(None, None)  # the CLI prints the summary, then the error
    assert "(1 notice(s) not delivered (last error: HTTP 503))" in str(raised.value)


def test_a_step_whose_retry_policy_ran_out_names_its_last_attempts_error():
    """A break test: a webhook answering 500 on every attempt ended the run with "... after its retries (Exceeded
    max_retries of 2)": Dagster's final failure has no cause; the last attempt's error is in its retry event."""
    import dagster as dg

    @dg.asset(retry_policy=dg.RetryPolicy(max_retries=2, delay=0))
    def deliveries():
        raise dg.Failure("1 notice(s) not delivered (0 delivered, 0 given up as dead_letter; last error: HTTP 500)")

    result = dg.materialize([deliveries], raise_on_error=False)
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    assert "max_retries" in failure.step_failure_data.error.message  # what was printed before
    from pipelines.defs.nightly.sensors import step_cause

    assert step_cause(result.all_events, failure) == (
        "1 notice(s) not delivered (0 delivered, 0 given up as dead_letter; last error: HTTP 500)")


def test_ctrl_c_before_dagster_takes_over_stops_the_run_with_one_line_and_nothing_staged(tmp_path, monkeypatch):
    # a break test: Ctrl-C in the first second of a run (the warehouse opened, Dagster's execution not yet started)
    # was swallowed (the run finished and exited 0) or failed seconds later on "partially initialized module
    # 'pandas'"; now it is held until the hand-over and stops the run there
    import os
    import signal

    import dagster as dg

    from pipelines.lib import dead_runs
    from tests.conftest import query, write_jsonl

    write_jsonl(tmp_path / "logs" / "a.jsonl", [{"ts": "2026-11-20T10:00:00Z", "request_id": "r", "response": {
        "type": "message", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 5}}}])
    released = dead_runs.release_dead_runs

    def interrupted_here(instance, **kwargs):  # the moment the break test hit: the warehouse held and prepared
        os.kill(os.getpid(), signal.SIGINT)
        return released(instance, **kwargs)

    monkeypatch.setattr(dead_runs, "release_dead_runs", interrupted_here)
    before = signal.getsignal(signal.SIGINT)
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None, False, None)
    with pytest.raises(runner.PipelineError) as stopped:
        runner.run_pipeline(instance=dg.DagsterInstance.ephemeral())
    assert str(stopped.value) == ("interrupted (SIGTERM or Ctrl-C) before it began its work; nothing was staged or "
                                  "built")
    assert signal.getsignal(signal.SIGINT) is before
    assert query(tmp_path / "w.duckdb", "select count(*) from stage.files") == [(0,)]


def test_a_run_that_failed_between_steps_names_its_run_failure_not_the_dagster_logs():
    # a break test: SIGTERM between two steps printed "days ... failed: see the Dagster logs", with no logs to see
    # (an ephemeral instance keeps none)
    error = SimpleNamespace(cls_name="DagsterExecutionInterruptedError", cause=None, message="")
    events = [SimpleNamespace(is_run_failure=True, message="Execution of run failed.",
                              event_specific_data=SimpleNamespace(error=error))]
    assert runner._run_failure_cause(events) == ("interrupted (SIGTERM or Ctrl-C) before it finished; the next run "
                                                 "finishes its work")
    quiet = [SimpleNamespace(is_run_failure=True, message="Execution of run failed.", event_specific_data=None)]
    assert runner._run_failure_cause(quiet) == "Execution of run failed."
