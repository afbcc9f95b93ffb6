"""A run whose worker dies (SIGKILL, OOM, a restarted machine) must not keep its ``duckdb`` pool slot:
every later cachemeter run (its retry, the next nightly ingest) would wait in the queue forever."""

import logging
import shutil
from datetime import timedelta
from types import SimpleNamespace

import dagster as dg
import yaml
from dagster._core.storage.dagster_run import DagsterRun
from dagster._daemon.monitoring import concurrency
from dagster._time import get_current_datetime

from tests.conftest import REPO


def test_a_dead_runs_pool_slot_is_freed_by_the_monitoring_daemon(tmp_path, monkeypatch):
    shutil.copy(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    assert "MONITORING" in instance.get_required_daemon_types()  # the daemon that frees slots runs at all
    run = instance.add_run(DagsterRun(job_name="cachemeter_daily", status=dg.DagsterRunStatus.STARTED))
    storage = instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("duckdb")
    assert storage.claim_concurrency_slot("duckdb", run.run_id, "core__usage").is_claimed
    # the worker is killed mid-step: the run is marked failed, its step never releases the slot
    instance.report_run_failed(run)
    assert storage.get_concurrency_info("duckdb").active_slot_count == 1

    later = get_current_datetime() + timedelta(minutes=10)
    monkeypatch.setattr(concurrency, "get_current_datetime", lambda: later)
    list(concurrency.execute_concurrency_slots_iteration(SimpleNamespace(instance=instance), logging.getLogger()))
    assert storage.get_concurrency_info("duckdb").active_slot_count == 0


def test_the_production_instance_frees_dead_runs_slots_too():
    config = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    assert config["run_monitoring"]["enabled"]
    assert 0 < config["run_monitoring"]["free_slots_after_run_end_seconds"] <= 300
