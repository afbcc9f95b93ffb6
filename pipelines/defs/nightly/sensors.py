"""Sensors that finish and watch the nightly work, all on by default.

* ``pending_days_sensor``: after staging, request one ``cachemeter_daily`` run per range of pending
  days. Which days changed is data inside the warehouse (``stage.pending_days``, written while files
  are staged), which Dagster's automation conditions cannot see, hence a sensor reading it. With no day
  pending but incident notices still due (the webhook was down), a ``cachemeter_publish`` run delivers them,
  at most one per ``NOTICE_RETRY_MINUTES``.
* ``run_failure_notice``: post one notice per failed cachemeter run to the alert webhook.
* ``nightly_watchdog``: post one notice when yesterday's ``core/usage`` partition is not built by
  ``CACHEMETER_NIGHTLY_DEADLINE_HOUR`` (UTC): the night did not run, or no usage was logged.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import date, datetime, timedelta, timezone

import dagster as dg
from duckdb import CatalogException, DuckDBPyConnection, IOException
from dagster_duckdb import DuckDBResource

from pipelines import parallel_days
from pipelines.defs.nightly.jobs import JOBS, TRIGGER, daily_job, ingest_job, publish_job, range_tags
from pipelines.defs.nightly.schedules import DEADLINE_HOUR_UTC
from pipelines.defs.partitions import PARTITIONS_START
from pipelines.defs.resources import warehouse_path
from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import dead_runs, warehouse, webhook
from pipelines.lib.sql import statement

IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
             dg.DagsterRunStatus.STARTED]
# incident notices a down webhook left due are tried again this often when no day is pending: they waited for the next
# night's logs (a "resolved" notice unsent for a day, every scheduled run green: a break test)
NOTICE_RETRY_MINUTES = 15
NOTICES_TRIGGER = "notices_due"  # such a run failing only on delivery posts no failure notice: the webhook is down


def utc_now() -> datetime:
    """The current time, UTC (a function so tests can move the clock)."""
    return datetime.now(timezone.utc)


def pending_ranges(conn: DuckDBPyConnection, dependent_days: int) -> list[tuple[date, date, int, datetime]]:
    """``(first_day, last_day, days, staged_at)`` per range of pending days on or after the first daily partition
    (``sql/core/pending_days__ranges.sql``)."""
    return conn.execute(statement("core/pending_days__ranges"),
                        {"dependent_days": dependent_days, "partitions_start": PARTITIONS_START}).fetchall()


def _latest_run_id(instance: dg.DagsterInstance, job_name: str, statuses: list) -> str | None:
    runs = instance.get_runs(filters=dg.RunsFilter(job_name=job_name, statuses=statuses), limit=1)
    return runs[0].run_id if runs else None


@dg.sensor(jobs=[daily_job, publish_job], minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Requests one cachemeter_daily run per range of pending UTC days (stage.pending_days), "
                       "and a cachemeter_publish run for incident notices still due.")
def pending_days_sensor(context: dg.SensorEvaluationContext, duckdb: DuckDBResource,
                        settings: CachemeterSettings):
    """Request the daily runs that bring every pending day up to date; skip while a cachemeter run is active.

    The run key names the range, its latest staged change and the latest successful ingest run, so a
    range is requested once per night it is still pending (a failed rebuild is tried again after the
    next staging, not every minute). On a PostgreSQL-catalog lake with ``CACHEMETER_PARALLEL`` > 1 a range
    is requested as parallel chunk runs, then its window run (``parallel_days.run_requests``).

    First it releases the runs of ``cachemeter run`` processes of this host that died (``dead_runs``): such a run
    stays STARTED holding the warehouse's pool slot, which Dagster's run monitoring does not free (the default run
    launcher has no health check for a process it did not launch), so the nightly runs queued behind it and this
    sensor skipped "a run is in progress" every minute until someone ran the CLI (a break test).
    """
    released = dead_runs.release_dead_runs(context.instance, by="the pending-days sensor")
    if released:
        context.log.warning(f"released {len(released)} run(s) of cachemeter run processes that died: "
                            f"{', '.join(r[:8] for r in released)}")
    for job in (ingest_job, daily_job, publish_job):
        if _latest_run_id(context.instance, job.name, IN_FLIGHT):
            return dg.SkipReason(f"a {job.name} run is queued or in progress")
    path = warehouse_path(duckdb)  # WarehousePathError (a failed tick naming the setting) when relative
    if not warehouse.exists(path):
        return dg.SkipReason("no warehouse yet: the nightly schedule (or `cachemeter run`) creates it")
    try:
        conn = warehouse.connect(path, read_only=True)
    except IOException as exc:
        holder = warehouse.lock_holder(exc)
        if holder is None:  # not a lock: a file DuckDB cannot open fails the tick with DuckDB's reason
            raise
        return dg.SkipReason(f"the warehouse is held by {holder}; checking again next tick")
    with conn:
        try:
            ranges = pending_ranges(conn, settings.dependent_days)
            due = 0 if ranges else notices_due(conn, settings)
        except CatalogException:  # a DuckDB file no run has prepared yet (created by hand, or empty)
            return dg.SkipReason(f"{path} holds no cachemeter tables yet: the first run creates them")
    if not ranges and due:
        now = utc_now()
        slot = now.replace(minute=now.minute - now.minute % NOTICE_RETRY_MINUTES, second=0, microsecond=0)
        return dg.RunRequest(job_name=publish_job.name, tags={TRIGGER: NOTICES_TRIGGER},
                             run_key=f"notices@{slot.isoformat()}")
    if not ranges:
        return dg.SkipReason("no pending days")
    ingest_run = _latest_run_id(context.instance, ingest_job.name, [dg.DagsterRunStatus.SUCCESS]) or "none"
    workers = parallel_days.workers_for(str(path))
    if workers > 1:  # a PostgreSQL lake: chunks of days in parallel runs, then the range's window run
        def succeeded(range_key: str) -> int:
            return len(context.instance.get_run_ids(filters=dg.RunsFilter(
                tags={parallel_days.RANGE_TAG: range_key}, statuses=[dg.DagsterRunStatus.SUCCESS])))
        return parallel_days.run_requests(ranges, workers, ingest_run, "pending_days_sensor", succeeded)
    return [dg.RunRequest(job_name=daily_job.name, tags={**range_tags(first, last), "cachemeter/pending_days": str(days),
                                                         TRIGGER: "pending_days_sensor"},
                          run_key=f"{first}..{last}@{staged_at.isoformat()}#{ingest_run}")
            for first, last, days, staged_at in ranges]


def notices_due(conn: DuckDBPyConnection, settings: CachemeterSettings) -> int:
    """Incident notices the alert webhook has not taken yet (0 when no webhook is set): what
    ``sql/alerts/alert_deliveries__pending.sql`` lists for the next delivery pass."""
    if not os.environ.get(settings.webhook_url_env):
        return 0
    return len(conn.execute(statement("alerts/alert_deliveries__pending"),
                            webhook.pending_params(settings.webhook_window_days)).fetchall())


def root_cause(error) -> str:
    """The message of the first non-Dagster error in a step failure's chain: cachemeter's own error
    (which names the file, line and fix) rather than the low-level exception it wraps, without the
    exception's qualified class name Dagster puts in front of it.

    DuckDB's out-of-memory error lists ``SET`` statements a cachemeter user cannot type; its first line is
    kept and the setting that raises the limit named instead (``OUT_OF_MEMORY_HINT``). A step stopped by a signal
    says so (``INTERRUPTED_MESSAGE``; it was "dagster._core.errors.DagsterExecutionInterruptedError", a break test).
    """
    while error.cls_name.startswith("Dagster") and getattr(error, "cause", None) is not None:
        error = error.cause
    if error.cls_name == "RetryRequested" and getattr(error, "cause", None) is not None:
        # a step that asked to be run again (the warehouse held by another process, a DuckLake conflict) until its
        # retries ran out: Dagster's words were "Exceeded max_retries of 5", the reason is the cause (a break test)
        retries = re.search(r"max_retries of (\d+)", error.message)
        given_up = f" (still so after {retries.group(1)} retries)" if retries else ""
        return root_cause(error.cause) + given_up
    if error.cls_name in INTERRUPTED or (error.cls_name == "RuntimeError" and error.message.strip().endswith(
            "Query interrupted")):  # no message of its own, or DuckDB's Python client's words for a signal mid-statement
        return INTERRUPTED_MESSAGE
    message = error.message.strip()
    qualified_name, separator, text = message.partition(": ")
    message = text if separator and qualified_name.rsplit(".", 1)[-1] == error.cls_name else message
    if error.cls_name == "OutOfMemoryException":
        return message.splitlines()[0] + OUT_OF_MEMORY_HINT.format(limit=warehouse.configured_memory_limit())
    return message


def step_cause(events: list, failure) -> str:
    """Why the step of the failure event ``failure`` failed: its error's ``root_cause``, or, when the step failed
    because its ``RetryPolicy`` ran out (Dagster's "Exceeded max_retries of 2", with no cause), its last attempt's
    error (a break test: a webhook answering 500 printed only Dagster's words)."""
    data = failure.step_failure_data
    if data.error is not None and "max_retries" in (data.error.message or ""):
        described = getattr(data.user_failure_data, "description", None)
        if described:  # a dg.Failure raised by each attempt
            return described
        if data.error.cause is not None:  # an exception raised by each attempt
            return root_cause(data.error.cause)
        retried = [event for event in events if event.is_step_up_for_retry and event.step_key == failure.step_key
                   and event.step_retry_data.error is not None and event.step_retry_data.error.cause is not None]
        if retried:
            return root_cause(retried[-1].step_retry_data.error.cause)
    return root_cause(data.error)


# what a step stopped by SIGTERM or Ctrl-C raises (Dagster turns the signal into its own error, with no message)
# (and DuckDB's InterruptException, "Query interrupted": a signal during a statement; the pipeline sets no statement
# time limit, so a step's interrupted statement was stopped by one; it said "Query interrupted", a break test)
INTERRUPTED = ("DagsterExecutionInterruptedError", "KeyboardInterrupt", "InterruptException")
INTERRUPTED_MESSAGE = "interrupted (SIGTERM or Ctrl-C) before it finished; the next run finishes its work"

OUT_OF_MEMORY_HINT = (" (DuckDB's memory limit, CACHEMETER_MEMORY_LIMIT={limit}: run again with a larger one "
                      "that the machine's free memory holds, e.g. CACHEMETER_MEMORY_LIMIT=4GB)")


def _notify(settings: CachemeterSettings, text: str, fields: dict, key: str) -> str:
    """Post one notice to the alert webhook with ``Idempotency-Key: key``; returns what happened (never the URL):
    "posted", "not posted: ..." (no webhook set) or "posting failed: ..."."""
    url = os.environ.get(settings.webhook_url_env)
    if not url:
        return f"not posted: {settings.webhook_url_env} is not set"
    options = webhook.DeliveryOptions(format=settings.webhook_format,
                                      routing_key=os.environ.get(settings.webhook_routing_key_env))
    if problem := webhook.setup_problem(options):  # kept pending: posted once the setting is fixed
        return f"posting failed: {problem}"
    try:
        webhook.post_json(url, webhook.run_notice_payload(text, fields, key, options),
                          timeout_seconds=settings.webhook_timeout_seconds, headers={"Idempotency-Key": key})
    except webhook.DeliveryError as exc:
        return f"posting failed: {exc}"
    return "posted"


# a failed run whose failure notice could not be posted carries these tags until a later tick posts it: Dagster's
# run-status sensors move their cursor past a run even when the tick fails, so a notice lost to a webhook outage
# was lost for good (a break test); nightly_watchdog posts the pending ones again every 15 minutes
NOTICE_TAG, NOTICE_TEXT_TAG = "cachemeter/failure_notice", "cachemeter/failure_notice_text"
FAILURE_PREFIX = "[critical] cachemeter run failed: "  # a failed run's notice: this, then job, range, run and cause


def _failure_fields(run: dg.DagsterRun) -> dict:
    return {"event": "run_failure", "job": run.job_name, "run_id": run.run_id,
            "range_start": run.tags.get("dagster/asset_partition_range_start"),
            "range_end": run.tags.get("dagster/asset_partition_range_end")}


def _post_pending_failure_notices(instance: dg.DagsterInstance, settings: CachemeterSettings) -> list[str]:
    """Post again the failure notices a webhook outage left pending (``NOTICE_TAG``); returns what happened to them.

    One pending notice is posted as it was written. Several are one notice (``pending_failures_notice``): after an
    outage each run that failed meanwhile, most of them on the outage itself (their alert deliveries), would
    otherwise page once, all in the same minute (four at once in a break test)."""
    runs = list(reversed(instance.get_runs(filters=dg.RunsFilter(tags={NOTICE_TAG: "pending"}), limit=50)))
    if not runs:
        return []
    if len(runs) == 1:
        (run,) = runs
        outcome = _notify(settings, run.tags.get(NOTICE_TEXT_TAG, ""), _failure_fields(run), f"run_failure:{run.run_id}")
    else:
        outcome = _notify(settings, *pending_failures_notice(runs))
    if outcome == "posted" or outcome.startswith("not posted"):
        for run in runs:
            instance.add_run_tags(run.run_id, {NOTICE_TAG: "posted" if outcome == "posted" else "dropped"})
    return [f"{', '.join(run.run_id[:8] for run in runs)}: {outcome}"]


def pending_failures_notice(runs: list[dg.DagsterRun]) -> tuple[str, dict, str]:
    """The one notice (text, fields, dedup key) of several failed runs whose own notices the webhook missed, oldest
    first: a line per run (its own notice's words), ``fields`` ``{"event": "run_failures", "runs": [...]}``, and a key
    of the run ids (the same runs are the same notice, whichever tick posts it)."""
    lines = [run.tags.get(NOTICE_TEXT_TAG, "").removeprefix(FAILURE_PREFIX) or f"{run.job_name}, run {run.run_id[:8]}"
             for run in runs]
    text = (f"[critical] {len(runs)} cachemeter runs failed while the alert webhook could not be reached:\n"
            + "\n".join(f"- {line}" for line in lines))
    key = "run_failures:" + hashlib.sha256(" ".join(sorted(run.run_id for run in runs)).encode()).hexdigest()[:16]
    return text, {"event": "run_failures", "runs": [_failure_fields(run) for run in runs]}, key


@dg.run_failure_sensor(monitored_jobs=JOBS, default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
                       description="Posts one notice per failed cachemeter run to the alert webhook.")
def run_failure_notice(context: dg.RunFailureSensorContext, settings: CachemeterSettings) -> None:
    """One webhook post per failed run: job, partition range, run id and the first failed step's cause."""
    run = context.dagster_run
    days = run.tags.get("dagster/asset_partition_range_start")
    span = f" ({days} .. {run.tags.get('dagster/asset_partition_range_end')})" if days else ""
    steps = context.get_step_failure_events()
    reason = (f"{steps[0].step_key}: {step_cause([], steps[0])}" if steps
              else context.failure_event.message or "failed").strip().splitlines()[0]
    if not steps and "from outside the execution context" in reason:  # run monitoring's words for a dead worker
        instance = context.instance
        retried = instance.run_retries_enabled and int(run.tags.get(
            "dagster/max_retries", instance.run_retries_max_retries)) > int(run.tags.get("dagster/retry_number", 0))
        reason = ("its worker process died (killed, out of memory, or the machine stopped)"
                  + ("; Dagster runs it again (dagster.yaml run_retries): a notice follows only if that fails too"
                     if retried else ""))
    if run.tags.get(TRIGGER) == NOTICES_TRIGGER and steps and all(
            step.step_key == "marts__alert_deliveries" for step in steps):
        # a retry of the notices a down webhook left due, failing on it again: a notice of that to the same webhook
        # would only queue up (one every NOTICE_RETRY_MINUTES), and the notices themselves stay due
        context.log.info(f"run {run.run_id}: the incident notices are still not delivered; tried again in "
                         f"{NOTICE_RETRY_MINUTES} minutes")
        return
    text = f"{FAILURE_PREFIX}{run.job_name}{span}, run {run.run_id[:8]}: {reason}"
    outcome = _notify(settings, text, _failure_fields(run), f"run_failure:{run.run_id}")
    if outcome.startswith("posting failed"):  # posted again by nightly_watchdog's ticks until the webhook takes it
        context.instance.add_run_tags(run.run_id, {NOTICE_TAG: "pending", NOTICE_TEXT_TAG: text})
    context.log.info(f"failure notice for run {run.run_id}: {outcome}")


@dg.sensor(minimum_interval_seconds=900, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Posts one notice when yesterday's core/usage partition is not built by the deadline hour (UTC).")
def nightly_watchdog(context: dg.SensorEvaluationContext, settings: CachemeterSettings) -> dg.SkipReason:
    """Post the run-failure notices a webhook outage left pending (``NOTICE_TAG``), then judge the freshness of
    the nightly run: yesterday (UTC) must have a ``core/usage`` materialization made after it was
    complete (its end plus ``complete_lag_hours``) by the deadline. A build while the day was under way does not
    count: the night before stages the first hours of the next day and builds its partition, so a night that did not
    run at all left yesterday with a few hours of data and the watchdog saying "built" (a break test). The day is
    judged once: its cursor moves when the notice is posted (or no webhook is set), else the next tick posts again."""
    for outcome in _post_pending_failure_notices(context.instance, settings):
        context.log.info(f"pending failure notice {outcome}")
    now = utc_now()
    yesterday = (now - timedelta(days=1)).date()
    if now.hour < DEADLINE_HOUR_UTC or yesterday < date.fromisoformat(PARTITIONS_START):
        return dg.SkipReason(f"before {DEADLINE_HOUR_UTC:02d}:00 UTC")
    if context.cursor == yesterday.isoformat():
        return dg.SkipReason(f"{yesterday} already judged")
    if not _latest_run_id(context.instance, daily_job.name, [dg.DagsterRunStatus.SUCCESS]):
        return dg.SkipReason("no cachemeter_daily run has succeeded yet: judging starts after the first one")
    built = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["core", "usage"]), asset_partitions=[yesterday.isoformat()]),
        limit=1).records  # the newest first
    complete = datetime.combine(yesterday + timedelta(days=1), datetime.min.time(), timezone.utc) + timedelta(
        hours=settings.complete_lag_hours)
    if built and built[0].timestamp >= complete.timestamp():
        context.update_cursor(yesterday.isoformat())
        return dg.SkipReason(f"{yesterday} is built")
    if built:
        at = datetime.fromtimestamp(built[0].timestamp, timezone.utc)
        text = (f"[critical] cachemeter: {yesterday} was built only while it was under way (last at "
                f"{at:%Y-%m-%d %H:%M} UTC), not after it ended, by {DEADLINE_HOUR_UTC:02d}:00 UTC: the nightly run did "
                "not run since (is the schedule on? is a run stuck in the queue?)")
    else:
        text = (f"[critical] cachemeter: no usage for {yesterday} by {DEADLINE_HOUR_UTC:02d}:00 UTC: the nightly run "
                "did not build it (did it run? were logs for that day written?)")
    outcome = _notify(settings, text, {"event": "missing_day", "day": yesterday.isoformat()}, f"missing_day:{yesterday}")
    if not outcome.startswith("posting failed"):  # else the next tick (15 minutes) posts it again
        context.update_cursor(yesterday.isoformat())
    return dg.SkipReason(outcome)


@dg.definitions
def nightly() -> dg.Definitions:
    """Register the jobs, the nightly schedule and the sensors that finish and watch it."""
    from pipelines.defs.nightly.schedules import nightly_schedule

    return dg.Definitions(jobs=JOBS, schedules=[nightly_schedule],
                          sensors=[pending_days_sensor, run_failure_notice, nightly_watchdog])
