"""Nightly operation through Dagster: the default automation (schedule + sensors) and the CLI run the same
jobs, rebuild every stale day, never show a stale day as passing, and report a failed or missing night."""

import json
from datetime import date, datetime, timedelta, timezone

import dagster as dg
import pytest
import duckdb

from tests.conftest import query, run_pipeline, snapshot, write_jsonl, write_prices
from tests.defs.test_late_data import built_from_scratch, evaluate, late_rows
from tests.defs.test_pipeline import hit_rate_logs
from tests.lib.test_webhook import Receiver

CHECK = "agrees_with_core_usage"


def tick(instance: dg.DagsterInstance, when: datetime) -> list[dg.ExecuteInProcessResult]:
    """The default automation's next ticks, as the daemon runs them: the nightly schedule's run, then
    every run the pending-days sensor requests until it requests none. Each request is executed in
    process with the request's own job and tags (the daemon would launch it in a run worker)."""
    from pipelines.definitions import defs
    from pipelines.defs.nightly.sensors import pending_days_sensor

    loaded = defs()
    schedule = loaded.resolve_schedule_def("nightly_schedule")
    requests = schedule.evaluate_tick(dg.build_schedule_context(instance=instance, scheduled_execution_time=when)).run_requests
    results = [loaded.resolve_job_def(schedule.job_name).execute_in_process(instance=instance, tags=r.tags) for r in requests]
    while requests := evaluate(pending_days_sensor, instance):
        results += [loaded.resolve_job_def(r.job_name).execute_in_process(instance=instance, tags=r.tags) for r in requests]
    assert all(r.success for r in results)
    return results


def check_outcomes(result: dg.ExecuteInProcessResult) -> list[tuple[bool, str, list]]:
    return [(e.passed, e.severity.value, e.metadata["days"].value)
            for e in result.get_asset_check_evaluations() if e.check_name == CHECK]


def test_scheduled_path_rebuilds_late_and_edited_days_to_equal_a_fresh_build(tmp_path):
    from pipelines import runner

    logs = tmp_path / "logs"
    hit_rate_logs(logs, broken_from=date(2026, 11, 8))  # usage.jsonl: 2026-11-01 .. 2026-11-10
    write_jsonl(logs / "edited.jsonl", late_rows(5))  # 2026-11-03, five requests
    runner.configure(logs, tmp_path / "w.duckdb", None)
    instance = dg.DagsterInstance.ephemeral()
    first = tick(instance, datetime(2026, 11, 11, 2, 30, tzinfo=timezone.utc))
    assert [r.dagster_run.job_name for r in first] == ["cachemeter_ingest", "cachemeter_daily"]
    assert first[1].dagster_run.tags["dagster/asset_partition_range_start"] == "2026-11-01"

    # a late file for 2026-11-06, and records appended to the file holding 2026-11-03 (five requests become
    # eight; an edit that shrinks a file keeps its old rows as history, README "Bad input loses nothing")
    write_jsonl(logs / "late" / "2026-11-06.jsonl", [{**r, "ts": r["ts"].replace("11-03", "11-06"),
                                                      "request_id": r["request_id"] + "-06"} for r in late_rows(7)])
    write_jsonl(logs / "edited.jsonl", late_rows(8))
    second = tick(instance, datetime(2026, 11, 12, 2, 30, tzinfo=timezone.utc))
    ingest, daily = second
    # right after staging the two stale days fail the consistency check (WARN: expected until rebuilt) ...
    assert check_outcomes(ingest) == [(False, "WARN", ["2026-11-03", "2026-11-06"])]
    # ... and the one daily run the sensor requested rebuilds them and the days reading them; then it passes
    assert (daily.dagster_run.tags["dagster/asset_partition_range_start"],
            daily.dagster_run.tags["dagster/asset_partition_range_end"]) == ("2026-11-03", "2026-11-10")
    assert check_outcomes(daily) == [(True, "ERROR", [])]
    db = tmp_path / "w.duckdb"
    assert query(db, "select count(*) from stage.pending_days") == [(0,)]
    assert snapshot(db) == snapshot(built_from_scratch(tmp_path, logs))


def test_a_stale_day_fails_the_blocking_check_of_a_daily_run_that_does_not_rebuild_it(tmp_path):
    # marts out of step with core.usage inside the run's own window: the ERROR check fails and blocks publishing
    from pipelines.definitions import defs
    from pipelines.defs.nightly.jobs import CONSISTENCY_CHECK

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    with duckdb.connect(str(db)) as conn:
        conn.execute("update marts.daily_savings set requests = requests + 1 where day = '2026-11-04'")
    loaded = defs()
    result = dg.materialize(list(loaded.assets) + list(loaded.asset_checks), resources=dict(loaded.resources),
                            selection=dg.AssetSelection.checks(CONSISTENCY_CHECK), raise_on_error=False,
                            instance=dg.DagsterInstance.ephemeral(),
                            tags={"dagster/asset_partition_range_start": "2026-11-03",
                                  "dagster/asset_partition_range_end": "2026-11-05"})
    assert not result.success  # a blocking ERROR: what would follow it (publishing) does not run
    assert check_outcomes(result) == [(False, "ERROR", ["2026-11-04"])]


def test_the_cli_and_the_schedule_build_identical_warehouses_under_the_same_job_names(tmp_path):
    from pipelines import runner

    logs = tmp_path / "logs"
    hit_rate_logs(logs, broken_from=date(2026, 11, 8))
    instance = dg.DagsterInstance.ephemeral()
    runner.configure(logs, tmp_path / "cli" / "w.duckdb", None)
    runner.run_pipeline(instance=instance)
    cli_jobs = [r.job_name for r in reversed(instance.get_runs())]
    runner.configure(logs, tmp_path / "scheduled" / "w.duckdb", None)
    tick(instance, datetime(2026, 11, 11, 2, 30, tzinfo=timezone.utc))
    scheduled_jobs = [r.job_name for r in reversed(instance.get_runs())][len(cli_jobs):]
    assert cli_jobs == scheduled_jobs == ["cachemeter_ingest", "cachemeter_daily"]
    triggers = [r.tags.get("cachemeter/trigger") for r in reversed(instance.get_runs())]
    assert triggers == ["cli", "cli", "nightly_schedule", "pending_days_sensor"]
    assert snapshot(tmp_path / "cli" / "w.duckdb") == snapshot(tmp_path / "scheduled" / "w.duckdb")


def failure_sensor_tick(instance, cursor):
    from pipelines.definitions import defs
    from pipelines.defs.nightly.sensors import run_failure_notice

    resources = dict(defs().resources)
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"settings": resources["settings"]},
                                      repository_def=defs().get_repository_def())
    run_failure_notice.evaluate_tick(context)
    return context.cursor


def test_a_failed_run_posts_exactly_one_notice_to_the_webhook(tmp_path, monkeypatch):
    from pipelines import runner
    from pipelines.definitions import defs

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    prices = write_prices(tmp_path / "prices.csv", [{"provider": "openai", "model": "gpt-4.1", "effective_from": "2026-01-01",
                                                     "input_per_mtok": "two dollars"}])
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", prices)
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    instance = dg.DagsterInstance.ephemeral()
    try:
        cursor = failure_sensor_tick(instance, None)  # the sensor starts from now
        failed = defs().resolve_job_def("cachemeter_ingest").execute_in_process(instance=instance, raise_on_error=False)
        assert not failed.success
        cursor = failure_sensor_tick(instance, cursor)
        failure_sensor_tick(instance, cursor)  # the next tick posts nothing more
    finally:
        receiver.close()
    (notice,) = receiver.bodies
    assert notice["text"].startswith(f"[critical] cachemeter run failed: cachemeter_ingest, run {failed.run_id[:8]}")
    # the reason is the cause an operator can act on (file, line, field), not Dagster's "Steps failed"
    assert notice["text"].endswith(f"price_book: {prices}:2: input_per_mtok 'two dollars' is not a number "
                                   "(USD per million tokens)"), notice["text"]
    assert notice["cachemeter"] == {"event": "run_failure", "job": "cachemeter_ingest", "run_id": failed.run_id,
                                    "range_start": None, "range_end": None}
    assert "SECRET-TOKEN" not in json.dumps(notice)


def failing_ingest_with_the_webhook_down(tmp_path, monkeypatch):
    """An ingest job that fails (a price that is not a number) with the webhook down (connection refused), at 05:00 UTC:
    ``(instance, run_failing, watchdog_tick)``; ``run_failing()`` runs it once and lets the failure sensor see it."""
    from pipelines import runner
    from pipelines.definitions import defs
    from pipelines.defs.nightly import sensors

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    prices = write_prices(tmp_path / "prices.csv", [{"provider": "openai", "model": "gpt-4.1", "effective_from": "2026-01-01",
                                                     "input_per_mtok": "two dollars"}])
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", prices)
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    instance = dg.DagsterInstance.ephemeral()
    resources = {"settings": dict(defs().resources)["settings"]}
    monkeypatch.setattr(sensors, "utc_now", lambda: datetime(2026, 11, 11, 5, 0, tzinfo=timezone.utc))
    cursor = [failure_sensor_tick(instance, None)]

    def run_failing():
        failed = defs().resolve_job_def("cachemeter_ingest").execute_in_process(instance=instance, raise_on_error=False)
        cursor[0] = failure_sensor_tick(instance, cursor[0])
        return failed

    def watchdog_tick():
        return sensors.nightly_watchdog(dg.build_sensor_context(instance=instance, resources=resources)).skip_message

    return instance, run_failing, watchdog_tick


def test_a_failure_notice_the_webhook_missed_is_posted_by_a_later_watchdog_tick(tmp_path, monkeypatch):
    """A break test: a failed run's notice was posted once; with the webhook down at that moment it was lost for good
    (Dagster's run-status sensors move past a run whatever the tick does), with only an INFO line in the sensor's log.
    The run now carries the pending notice, and the watchdog's ticks post it once the webhook takes it."""
    from pipelines.defs.nightly import sensors

    instance, run_failing, watchdog_tick = failing_ingest_with_the_webhook_down(tmp_path, monkeypatch)
    failed = run_failing()
    assert instance.get_run_by_id(failed.run_id).tags[sensors.NOTICE_TAG] == "pending"
    watchdog_tick()  # still down: still pending
    assert instance.get_run_by_id(failed.run_id).tags[sensors.NOTICE_TAG] == "pending"
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    try:
        assert watchdog_tick() == "before 06:00 UTC"
        watchdog_tick()
    finally:
        receiver.close()
    (notice,) = receiver.bodies
    assert notice["text"].startswith(f"[critical] cachemeter run failed: cachemeter_ingest, run {failed.run_id[:8]}")
    assert notice["cachemeter"]["run_id"] == failed.run_id and receiver.keys == [f"run_failure:{failed.run_id}"]
    assert instance.get_run_by_id(failed.run_id).tags[sensors.NOTICE_TAG] == "posted"


def test_failure_notices_the_webhook_missed_are_one_notice_once_it_is_back(tmp_path, monkeypatch):
    """A break test: after a webhook outage every run that failed meanwhile posted its own "[critical] run failed"
    notice in the same minute (four at once). Several pending notices are now one, a line per run, oldest first."""
    from pipelines.defs.nightly import sensors

    instance, run_failing, watchdog_tick = failing_ingest_with_the_webhook_down(tmp_path, monkeypatch)
    failed = [run_failing() for _ in range(3)]
    assert [instance.get_run_by_id(r.run_id).tags[sensors.NOTICE_TAG] for r in failed] == ["pending"] * 3
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    try:
        watchdog_tick()
        watchdog_tick()  # nothing pending any more: nothing posted again
    finally:
        receiver.close()
    (notice,) = receiver.bodies
    lines = notice["text"].splitlines()
    assert lines[0] == "[critical] 3 cachemeter runs failed while the alert webhook could not be reached:"
    assert [line[:len("- cachemeter_ingest, run 12345678")] for line in lines[1:]] == [
        f"- cachemeter_ingest, run {r.run_id[:8]}" for r in failed]  # oldest first
    assert all(line.endswith("input_per_mtok 'two dollars' is not a number (USD per million tokens)") for line in lines[1:])
    assert [run["run_id"] for run in notice["cachemeter"]["runs"]] == [r.run_id for r in failed]
    assert notice["cachemeter"]["event"] == "run_failures" and receiver.keys[0].startswith("run_failures:")
    assert [instance.get_run_by_id(r.run_id).tags[sensors.NOTICE_TAG] for r in failed] == ["posted"] * 3


@pytest.mark.parametrize("retries", [True, False])
def test_a_run_whose_worker_died_says_so_and_whether_dagster_runs_it_again(tmp_path, monkeypatch, retries):
    """A break test: a daemon run whose worker was killed posted "[critical] ... This run has been marked as failed from
    outside the execution context.", no reason, and nothing said that run_retries would run it again (it did)."""
    from pipelines import runner
    from pipelines.definitions import defs

    runner.configure(tmp_path, tmp_path / "w.duckdb", None)
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    overrides = {"run_retries": {"enabled": retries, "max_retries": 1}}
    try:
        (tmp_path / "home").mkdir()
        with dg.DagsterInstance.local_temp(str(tmp_path / "home"), overrides=overrides) as instance:
            cursor = failure_sensor_tick(instance, None)
            run = instance.create_run_for_job(defs().resolve_job_def("cachemeter_ingest"))
            instance.report_run_failed(run, message="This run has been marked as failed from outside the execution context.")
            failure_sensor_tick(instance, cursor)
    finally:
        receiver.close()
    (notice,) = receiver.bodies
    said = notice["text"].split(f"run {run.run_id[:8]}: ", 1)[1]
    died = "its worker process died (killed, out of memory, or the machine stopped)"
    assert said == died + ("; Dagster runs it again (dagster.yaml run_retries): a notice follows only if that fails too"
                           if retries else "")


def test_the_watchdog_posts_once_when_yesterday_is_not_built_by_the_deadline(tmp_path, monkeypatch):
    from pipelines import runner
    from pipelines.definitions import defs
    from pipelines.defs.nightly import sensors

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))  # up to 2026-11-10
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None)
    instance = dg.DagsterInstance.ephemeral()
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    resources = {"settings": dict(defs().resources)["settings"]}

    def watch(now, cursor=None):
        monkeypatch.setattr(sensors, "utc_now", lambda: now)
        context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
        return sensors.nightly_watchdog(context).skip_message, context.cursor

    try:
        fresh, _ = watch(datetime(2026, 11, 11, 7, 0, tzinfo=timezone.utc))  # a new instance: nothing ran yet
        runner.run_pipeline(instance=instance)
        early, _ = watch(datetime(2026, 11, 12, 5, 0, tzinfo=timezone.utc))
        built, _ = watch(datetime(2026, 11, 11, 7, 0, tzinfo=timezone.utc))  # 2026-11-10 was built
        missing, cursor = watch(datetime(2026, 11, 12, 7, 0, tzinfo=timezone.utc))  # 2026-11-11 was not
        again, _ = watch(datetime(2026, 11, 12, 7, 15, tzinfo=timezone.utc), cursor)
    finally:
        receiver.close()
    assert fresh == "no cachemeter_daily run has succeeded yet: judging starts after the first one"
    assert early == "before 06:00 UTC" and built == "2026-11-10 is built" and missing == "posted"
    assert again == "2026-11-11 already judged"
    (notice,) = [b for b in receiver.bodies if b.get("cachemeter", {}).get("event") == "missing_day"]  # (the run posts its alerts too)
    assert notice["text"].startswith("[critical] cachemeter: no usage for 2026-11-11 by 06:00 UTC")


def test_the_watchdog_posts_when_yesterday_was_built_only_while_it_was_under_way(tmp_path, monkeypatch):
    """A break test: the night before stages the first hours of the next day and builds its partition, so a night
    that did not run at all left that day with a few hours of data, and the watchdog found the early build and said
    "built". A build counts only when made after the day was complete (its end plus complete_lag_hours)."""
    from pipelines import runner
    from pipelines.definitions import defs
    from pipelines.defs.nightly import sensors

    today = datetime.now(timezone.utc)
    logs = tmp_path / "logs"
    write_jsonl(logs / "today.jsonl", [{"ts": (today - timedelta(minutes=1)).isoformat(), "provider": "openai",
                                        "model": "gpt-4o", "request_id": "r1",
                                        "response": {"usage": {"prompt_tokens": 10, "completion_tokens": 1}}}])
    runner.configure(logs, tmp_path / "w.duckdb", None)
    instance = dg.DagsterInstance.ephemeral()
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    resources = {"settings": dict(defs().resources)["settings"]}
    try:
        runner.run_pipeline(instance=instance)  # builds today's partition while today is under way
        tomorrow = datetime.combine(today.date() + timedelta(days=1), datetime.min.time(), timezone.utc)
        monkeypatch.setattr(sensors, "utc_now", lambda: tomorrow + timedelta(hours=7))
        said = sensors.nightly_watchdog(dg.build_sensor_context(instance=instance, resources=resources)).skip_message
    finally:
        receiver.close()
    assert said == "posted"
    (notice,) = [b for b in receiver.bodies if b.get("cachemeter", {}).get("event") == "missing_day"]
    assert notice["text"].startswith(f"[critical] cachemeter: {today.date()} was built only while it was under way")


def test_the_pending_days_sensor_says_what_is_wrong_with_the_warehouse(tmp_path, monkeypatch):
    import subprocess
    import sys

    import pytest

    from pipelines.definitions import defs
    from pipelines.defs.nightly.sensors import pending_days_sensor
    from pipelines.defs.resources import WarehousePathError
    from pipelines.lib import warehouse

    def tick():
        resources = dict(defs().resources)
        context = dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(),
                                          resources={k: resources[k] for k in ("duckdb", "settings")})
        return pending_days_sensor(context).skip_message

    monkeypatch.setenv("CACHEMETER_LOGS", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "w.duckdb"
    monkeypatch.setenv("CACHEMETER_DB", str(db))
    assert tick() == "no warehouse yet: the nightly schedule (or `cachemeter run`) creates it"
    duckdb.connect(str(db)).close()  # a DuckDB file no run has prepared
    assert tick() == f"{db} holds no cachemeter tables yet: the first run creates them"
    db.unlink()
    # a relative path is refused as the runs refuse it, not read relative to the daemon's working folder
    warehouse.connect(db).close()
    assert tick() == "no pending days"
    monkeypatch.setenv("CACHEMETER_DB", "w.duckdb")
    with pytest.raises(WarehousePathError, match="CACHEMETER_DB must be an absolute path"):
        tick()
    # a file DuckDB cannot open is not reported as "held by another process"
    monkeypatch.setenv("CACHEMETER_DB", str(tmp_path / "notes.duckdb"))
    (tmp_path / "notes.duckdb").write_text("not a database\n")
    with pytest.raises(duckdb.IOException):
        tick()
    # a file another process holds: skipped, naming the holder
    monkeypatch.setenv("CACHEMETER_DB", str(db))
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(db)!r}); "
                               "print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert tick().startswith(f"the warehouse is held by PID {holder.pid} (")  # DuckDB names the executable
    finally:
        holder.communicate("")


def test_a_run_out_of_duckdb_memory_names_the_setting_that_raises_the_limit(tmp_path, monkeypatch):
    import shutil

    from pipelines import runner
    from tests.conftest import REPO

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "fixtures" / "demo_logs" / "usage-2026-11-18.jsonl.gz", logs)
    # 30MB is below one block DuckDB allocates while staging (measured: a 30.5 MiB block)
    monkeypatch.setenv("CACHEMETER_MEMORY_LIMIT", "30MB")
    try:
        run_pipeline(tmp_path, logs)
    except runner.PipelineError as stopped:
        message = str(stopped)
    else:
        raise AssertionError("the run did not run out of its 30MB memory limit")
    assert message.startswith("ingest and pricing failed: Out of Memory Error: ")
    assert "CACHEMETER_MEMORY_LIMIT=30MB: run again with a larger one" in message
    assert "SET memory_limit" not in message and "\n" not in message  # DuckDB's SET advice is left out


def test_notices_a_down_webhook_left_due_are_delivered_without_waiting_for_new_logs(tmp_path, monkeypatch):
    """A break test: with the webhook back up, an incident's notice still due (a 'resolved' one, say) waited for the
    next night's logs, every scheduled run green meanwhile. The pending-days sensor now requests a cachemeter_publish
    run for it (one per NOTICE_RETRY_MINUTES); such a run failing on delivery again posts no failure notice (it would
    go to the same webhook, one every retry)."""
    from pipelines.definitions import defs
    from pipelines.defs.nightly import sensors

    logs = tmp_path / "logs"
    hit_rate_logs(logs, broken_from=date(2026, 11, 8))
    monkeypatch.delenv("CACHEMETER_WEBHOOK_URL", raising=False)
    db = run_pipeline(tmp_path, logs)  # no webhook yet: the incident's notice is due
    instance = dg.DagsterInstance.ephemeral()
    assert evaluate(sensors.pending_days_sensor, instance) == []  # no webhook set: nothing to deliver
    monkeypatch.setattr(sensors, "utc_now", lambda: datetime(2026, 11, 11, 5, 37, tzinfo=timezone.utc))

    # the webhook refuses every post for a setting (no retry helps): the run fails, and no failure notice is queued
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    monkeypatch.setenv("CACHEMETER_WEBHOOK_FORMAT", "pagerduty")  # without its routing key
    (request,) = evaluate(sensors.pending_days_sensor, instance)
    assert (request.job_name, request.run_key, request.tags[sensors.TRIGGER]) == (
        "cachemeter_publish", "notices@2026-11-11T05:30:00+00:00", "notices_due")
    cursor = failure_sensor_tick(instance, None)
    failed = defs().resolve_job_def(request.job_name).execute_in_process(instance=instance, tags=request.tags,
                                                                          raise_on_error=False)
    failure_sensor_tick(instance, cursor)
    assert not failed.success and sensors.NOTICE_TAG not in instance.get_run_by_id(failed.run_id).tags

    monkeypatch.delenv("CACHEMETER_WEBHOOK_FORMAT")
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    try:
        (request,) = evaluate(sensors.pending_days_sensor, instance)
        assert defs().resolve_job_def(request.job_name).execute_in_process(instance=instance, tags=request.tags).success
        assert evaluate(sensors.pending_days_sensor, instance) == []  # delivered: nothing due
    finally:
        receiver.close()
    assert [key.rsplit(":", 1)[1] for key in receiver.keys] == ["opened"]
    assert query(db, "select count(*) from marts.alert_deliveries where status = 'delivered'") == [(1,)]


def test_a_settings_file_that_cannot_be_used_fails_each_run_naming_it_and_leaves_the_sensors_working(tmp_path, monkeypatch):
    # a break test: a typo in cachemeter.yaml stopped the code location from loading, and with it the schedule, every
    # sensor, the watchdog and the run-failure notices; the UI showed only "Error loading repository location"
    from pipelines.defs.nightly import sensors
    from pipelines.defs.resources import resources
    from pipelines.defs.settings import CachemeterSettings

    bad = tmp_path / "cachemeter.yaml"
    bad.write_text("alerts:\n  baseline_days: 7\n  min_requestz: 50\n")
    monkeypatch.setenv("CACHEMETER_CONFIG", str(bad))
    monkeypatch.setenv("CACHEMETER_LOGS", str(tmp_path))
    settings = resources().resources["settings"]  # the code location loads
    assert settings.config_error.startswith(f"{bad}: an unknown setting alerts.min_requestz (alerts.min_requests?)")

    @dg.asset
    def probe(settings: CachemeterSettings) -> int:
        return 1

    run = dg.materialize([probe], resources={"settings": settings}, raise_on_error=False)
    assert not run.success
    (failure,) = [event for event in run.all_events if event.is_step_failure or event.is_failure]
    assert "an unknown setting alerts.min_requestz" in str(failure.event_specific_data.error)
    # a sensor gets the defaults: the watchdog still evaluates (and the failure notices still post)
    context = dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources={"settings": settings})
    assert isinstance(sensors.nightly_watchdog(context), dg.SkipReason)
