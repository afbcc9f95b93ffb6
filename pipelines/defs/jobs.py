"""The nightly job and its schedule: stage new logs, rebuild prices, then the previous UTC day."""


from datetime import timedelta

import dagster as dg

from pipelines.defs.partitions import daily_partitions

nightly_job = dg.define_asset_job(
    "cachemeter_nightly",
    selection=dg.AssetSelection.all(),
    partitions_def=daily_partitions,
    description="Stage new logs, rebuild the price book, then usage, costs, savings and alerts for one UTC day.",
)


@dg.schedule(job=nightly_job, cron_schedule="30 2 * * *", execution_timezone="UTC")
def nightly_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """At 02:30 UTC, materialize the previous UTC day (complete by then)."""
    day = (context.scheduled_execution_time - timedelta(days=1)).strftime("%Y-%m-%d")
    return dg.RunRequest(run_key=day, partition_key=day)


@dg.definitions
def jobs() -> dg.Definitions:
    """Register the nightly job and schedule."""
    return dg.Definitions(jobs=[nightly_job], schedules=[nightly_schedule])
