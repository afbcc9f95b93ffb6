"""The usage-API job and its nightly schedule (on by default only when an admin key is set).

``cachemeter_usage_api`` materializes ``sources/usage_api_pages`` for one UTC day. ``usage_api_schedule``
runs it for yesterday at ``CACHEMETER_USAGE_API_CRON`` (default 02:00 UTC, half an hour before the
nightly staging at 02:30, which then reads the pages). Staging is an unpartitioned job, so the daily
fetch is its own partitioned run rather than a step of ``cachemeter_ingest``.
"""

from datetime import timedelta

import dagster as dg

from pipelines.defs.nightly.jobs import TRIGGER
from pipelines.defs.partitions import daily_partitions
from pipelines.defs.sources.assets import USAGE_API_PAGES
from pipelines.lib import options
from pipelines.lib.usage_api import pages

usage_api_job = dg.define_asset_job(
    "cachemeter_usage_api", selection=dg.AssetSelection.assets(USAGE_API_PAGES), partitions_def=daily_partitions,
    executor_def=dg.in_process_executor, tags={"cachemeter/kind": "usage_api"},
    description="Fetch one UTC day of the providers' usage APIs into the logs folder (staged by cachemeter_ingest).")

KEYED = bool(pages.configured(pages.Config.from_env()))  # read when the code loads, like the other crons


@dg.schedule(job=usage_api_job, cron_schedule=str(options.env_value("usage_api_cron")), execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING if KEYED else dg.DefaultScheduleStatus.STOPPED,
             description="Every night: fetch yesterday (UTC) from the usage APIs whose admin key is set.")
def usage_api_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """One run per night for the previous UTC day (run key: that day, so a tick never fetches twice)."""
    day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
    return dg.RunRequest(run_key=day, partition_key=day, tags={TRIGGER: "usage_api_schedule"})
