"""pipelines/lib/dead_runs.py: a killed `cachemeter run` leaves its Dagster run STARTED holding the duckdb pool
slot (dagster.yaml: limit 1); the next run releases it instead of waiting for the slot forever."""

import subprocess
import sys

import dagster as dg
import pytest

from pipelines.lib import dead_runs


@dg.op
def step():
    return 1


@dg.job
def a_job():
    step()


@pytest.fixture
def instance(tmp_path):
    with dg.DagsterInstance.local_temp(str(tmp_path)) as made:
        made.event_log_storage.set_concurrency_slots("duckdb", 1)
        yield made


def dead_process_token() -> str:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return f"{int(done.stdout)}:1"  # the process has ended (and a start time no live process has)


def started_run(instance, tags: dict) -> str:
    run = instance.create_run_for_job(a_job, tags=tags)
    instance.handle_new_event(dg.EventLogEntry(
        error_info=None, level="debug", user_message="", run_id=run.run_id, timestamp=0.0,
        dagster_event=dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, job_name=a_job.name)))
    assert instance.event_log_storage.claim_concurrency_slot("duckdb", run.run_id, "step").is_claimed
    return run.run_id


def test_this_process_is_alive_and_an_ended_one_or_a_reused_id_is_not():
    assert dead_runs.is_alive(dead_runs.process_token())
    assert not dead_runs.is_alive(dead_process_token())
    pid, _, start = dead_runs.process_token().partition(":")
    assert start and not dead_runs.is_alive(f"{pid}:{int(start) + 1}")  # the same id, another process
    assert dead_runs.is_alive("not a token")  # what cannot be judged is never released


def test_a_dead_processs_run_is_marked_failed_and_its_slot_freed(instance):
    host = dead_runs.run_tags()[dead_runs.HOST_TAG]
    dead = started_run(instance, {dead_runs.PROCESS_TAG: dead_process_token(), dead_runs.HOST_TAG: host})
    assert instance.get_run_by_id(dead).status == dg.DagsterRunStatus.STARTED

    assert dead_runs.release_dead_runs(instance) == [dead]

    assert instance.get_run_by_id(dead).status == dg.DagsterRunStatus.FAILURE
    assert instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots == []
    assert dead_runs.release_dead_runs(instance) == []  # once


@pytest.mark.parametrize("tags", [
    "live",                                    # this very process: a run under way
    "other host",                              # its process cannot be seen from here
    "untagged",                                # the daemon's runs: its run monitoring handles them
])
def test_runs_that_cannot_be_judged_dead_keep_their_slot(instance, tags):
    host = dead_runs.run_tags()[dead_runs.HOST_TAG]
    run_tags = {"live": dead_runs.run_tags(),
                "other host": {dead_runs.PROCESS_TAG: dead_process_token(), dead_runs.HOST_TAG: host + "-other"},
                "untagged": {}}[tags]
    run_id = started_run(instance, run_tags)
    assert dead_runs.release_dead_runs(instance) == []
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.STARTED
    assert len(instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots) == 1


def test_a_released_cli_run_is_not_re_executed_by_a_daemon_sharing_the_instance(tmp_path):
    # dagster.yaml retries runs that fail outside their steps (run_retries, max_retries 1): a dead CLI run marked
    # failed would be launched again by a daemon, beside the next cachemeter run that rebuilds its days anyway
    from dagster._core.execution.retries import auto_reexecution_should_retry_run
    from dagster._core.events import RunFailureReason

    with dg.DagsterInstance.local_temp(str(tmp_path), overrides={"run_retries": {"enabled": True, "max_retries": 1}}) as made:
        made.event_log_storage.set_concurrency_slots("duckdb", 2)  # a slot for each of the two runs
        host = dead_runs.run_tags()[dead_runs.HOST_TAG]
        tagged = {**dead_runs.run_tags(), dead_runs.PROCESS_TAG: dead_process_token(), dead_runs.HOST_TAG: host}
        dead = started_run(made, tagged)
        plain = started_run(made, {})
        assert dead_runs.release_dead_runs(made) == [dead]
        made.report_run_failed(made.get_run_by_id(plain))
        retried = {run_id: auto_reexecution_should_retry_run(made, made.get_run_by_id(run_id), RunFailureReason.RUN_EXCEPTION)
                   for run_id in (dead, plain)}
    assert retried == {dead: False, plain: True}


def test_the_daemons_pending_days_sensor_releases_a_dead_cli_runs_slot_too(instance, tmp_path, monkeypatch):
    """A break test: a `cachemeter run` killed while it shared the daemon's DAGSTER_HOME left its run STARTED holding
    the pool slot; Dagster's run monitoring never freed it, the nightly ingest sat QUEUED behind it and the sensor
    skipped "a run is in progress" every minute, until someone ran the CLI by hand."""
    from pipelines.definitions import defs
    from pipelines.defs.nightly.sensors import pending_days_sensor

    host = dead_runs.run_tags()[dead_runs.HOST_TAG]
    dead = started_run(instance, {dead_runs.PROCESS_TAG: dead_process_token(), dead_runs.HOST_TAG: host})
    monkeypatch.setenv("CACHEMETER_DB", str(tmp_path / "none.duckdb"))
    monkeypatch.setenv("CACHEMETER_LOGS", str(tmp_path))
    resources = dict(defs().resources)
    context = dg.build_sensor_context(instance=instance, resources={k: resources[k] for k in ("duckdb", "settings")})
    assert pending_days_sensor(context).skip_message.startswith("no warehouse yet")
    run = instance.get_run_by_id(dead)
    assert run.status == dg.DagsterRunStatus.FAILURE
    assert instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots == []
    failure = instance.all_logs(dead, of_type=dg.DagsterEventType.RUN_FAILURE)[0]
    assert failure.message.endswith("died before the run ended; released by the pending-days sensor")
