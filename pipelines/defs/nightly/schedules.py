"""The nightly schedule, on by default: stage the logs every night; the pending-days sensor rebuilds.

At ``CACHEMETER_NIGHTLY_CRON`` (default 02:30 UTC, when the previous UTC day is complete) it requests
one ``cachemeter_ingest`` run. That run stages new, late and edited files and marks the days whose rows
changed pending; ``pending_days_sensor`` then requests one ``cachemeter_daily`` run per range of pending
days. So a nightly run rebuilds every stale day (new, late or edited data, a changed price book, a
night that failed), not only "yesterday". Turn it off in the UI (Automation) or with
``dagster schedule stop nightly_schedule``.
"""

from datetime import timedelta

import dagster as dg

from pipelines.defs.nightly.jobs import TRIGGER, ingest_job
from pipelines.lib import options

NIGHTLY_CRON = str(options.env_value("nightly_cron"))  # a definition, read when the code loads
DEADLINE_HOUR_UTC = int(options.env_value("nightly_deadline_hour"))  # hour (UTC) yesterday must be built by
# core/usage is fresh when it was materialized in the 24 hours before the deadline (Dagster's freshness
# policy, shown on the asset; nightly_watchdog posts a late night to the webhook)
USAGE_FRESHNESS = dg.FreshnessPolicy.cron(deadline_cron=f"0 {DEADLINE_HOUR_UTC} * * *",
                                          lower_bound_delta=timedelta(hours=24), timezone="UTC")


@dg.schedule(job=ingest_job, cron_schedule=NIGHTLY_CRON, execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Every night: stage the logs folder; pending days are then rebuilt by pending_days_sensor.")
def nightly_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """One ingest run per scheduled time (run key: the scheduled UTC time, so a tick never runs twice)."""
    when = context.scheduled_execution_time
    return dg.RunRequest(run_key=when.strftime("%Y-%m-%dT%H:%M"), tags={TRIGGER: "nightly_schedule"})
