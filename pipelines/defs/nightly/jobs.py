"""The named jobs every run of cachemeter goes through, scheduled or from the CLI.

A night is two kinds of run. ``cachemeter_ingest`` (unpartitioned) stages new, late or edited log
files, rebuilds the price book and checks that no built day disagrees with its staged rows; staging
records the UTC days whose rows changed in ``stage.pending_days``. ``cachemeter_daily`` then rebuilds
one range of those days in a single run (daily assets read the whole partition window) and publishes
the snapshot and the report. The CLI (``pipelines/runner.py``) and the automation
(``schedules.py``, ``sensors.py``) run exactly these jobs, with ranges from one SQL file
(``sql/core/pending_days__ranges.sql``), so the warehouse is the same whichever ran it.
"""

import dagster as dg

from pipelines.defs.partitions import daily_partitions

STAGED_FILES = dg.AssetKey(["stage", "files"])
INGEST_ASSETS = [["stage", "files"], ["core", "quarantine"], ["core", "prices"], ["core", "cache_minimums"],
                 ["core", "billed_costs"]]
DAILY_ASSETS = [["core", "usage"], ["core", "usage_costs"], ["marts", "daily_savings"], ["marts", "prefix_families"],
                ["marts", "cost_reconciliation"], ["marts", "cache_alerts"], ["marts", "whatif_routing"],
                ["marts", "whatif_cache_ttl"], ["marts", "ttft_by_family"]]
PUBLISH_ASSETS = [["publish", "warehouse_snapshot"], ["publish", "cache_report"], ["marts", "alert_deliveries"]]
# The daily assets whose rows for a day read only that day's staged rows, prices and upstream rows: on a
# lake several processes build them for different days at once (pipelines/parallel_days.py), and the
# rest (WINDOW_ASSETS: trailing baselines, the TTL replay's day before, incidents) then run over the whole range.
DAY_LOCAL_ASSETS = [["core", "usage"], ["core", "usage_costs"], ["marts", "daily_savings"],
                    ["marts", "cost_reconciliation"], ["marts", "whatif_routing"], ["marts", "ttft_by_family"]]
WINDOW_ASSETS = [key for key in DAILY_ASSETS if key not in DAY_LOCAL_ASSETS]
# the consistency check of marts.daily_savings also runs right after staging: a day staged again but
# not rebuilt yet then shows as failed in the UI until the daily run rebuilds it
CONSISTENCY_CHECK = dg.AssetCheckKey(dg.AssetKey(["marts", "daily_savings"]), "agrees_with_core_usage")


# the code location's name in every workspace file (deploy/); CLI runs are recorded under it, so the UI
# can re-execute them
CODE_LOCATION = "cachemeter"
# dagster.yaml limits runs carrying this tag to one at a time (the queue holds the next one)
WAREHOUSE_TAG = {"cachemeter/warehouse": "1"}
# what started a run; the CLI's runs (pipelines/runner.py) are in-process, one after another in one process,
# so a run tagged so can prepare work for the next (the nightly schedule's runs each get their own process)
TRIGGER = "cachemeter/trigger"
CLI_TRIGGER = {TRIGGER: "cli"}


# every step writes the one DuckDB file (pool "duckdb", limit 1), so steps run one after another anyway;
# in one process they also share its open database and the seconds of imports a process per step repeats
ONE_PROCESS = dg.in_process_executor


def _assets(keys: list[list[str]]) -> dg.AssetSelection:
    return dg.AssetSelection.assets(*[dg.AssetKey(k) for k in keys])


ingest_job = dg.define_asset_job(
    "cachemeter_ingest",
    executor_def=ONE_PROCESS,
    selection=_assets(INGEST_ASSETS) | dg.AssetSelection.checks(CONSISTENCY_CHECK),
    description="Stage new, late or edited log files (core.usage, core.quarantine), rebuild the price book, "
                "and check that every built day still agrees with its staged rows.",
    tags={"cachemeter/kind": "ingest", **WAREHOUSE_TAG},
)

daily_job = dg.define_asset_job(
    "cachemeter_daily",
    executor_def=ONE_PROCESS,
    selection=_assets(DAILY_ASSETS) | _assets(PUBLISH_ASSETS),
    partitions_def=daily_partitions,
    description="Rebuild a range of UTC days (usage, costs, savings, prefix families, alerts) in one run, "
                "then publish the snapshot and the report and deliver new alerts.",
    tags={"cachemeter/kind": "daily", **WAREHOUSE_TAG},
)

publish_job = dg.define_asset_job(
    "cachemeter_publish",
    executor_def=ONE_PROCESS,
    selection=_assets(PUBLISH_ASSETS),
    description="Publish the read-only snapshot and the report (when no day needed rebuilding).",
    tags={"cachemeter/kind": "publish", **WAREHOUSE_TAG},
)

JOBS = [ingest_job, daily_job, publish_job]


def range_tags(first_day, last_day) -> dict[str, str]:
    """Run tags that make one run of ``cachemeter_daily`` cover the UTC days first_day .. last_day."""
    return {"dagster/asset_partition_range_start": first_day.isoformat(),
            "dagster/asset_partition_range_end": last_day.isoformat()}
