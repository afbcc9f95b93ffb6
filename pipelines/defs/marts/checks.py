"""The consistency check of ``marts.daily_savings``: every built day agrees with its staged usage rows.

It runs twice a night. Right after staging (in ``cachemeter_ingest``) it judges the pending days
that were built before: a late, edited or rotated file changed their rows in ``core.usage`` and the
marts still hold the old figures, so the check fails and names them (the UI shows the asset's check
as a failed check, never green, until the daily run rebuilds them; severity WARN there, so the ingest
run itself succeeds). After the daily rebuild (in ``cachemeter_daily``) it judges the run's window,
days not built counted too, with severity ERROR: it blocks publishing when any day still disagrees.
"""

from datetime import date, timedelta

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.resources import warehouse_connection
from pipelines.lib.sql import statement

SAVINGS = dg.AssetKey(["marts", "daily_savings"])


def run_window(context) -> tuple[date, date] | None:
    """The half-open UTC day window ``[start, end)`` of a partitioned run (one day or a range); None when unpartitioned."""
    tags = context.run.tags
    first = tags.get("dagster/asset_partition_range_start") or tags.get("dagster/partition")
    if not first:
        return None
    last = tags.get("dagster/asset_partition_range_end") or first
    return date.fromisoformat(first), date.fromisoformat(last) + timedelta(days=1)


@dg.asset_check(asset=SAVINGS, name="agrees_with_core_usage", blocking=True,
                additional_deps=[dg.AssetKey(["core", "usage"]), dg.AssetKey(["stage", "files"])],  # runs after staging
                description="Per UTC day: requests and prompt / cache read / cache write / output tokens of "
                            "marts.daily_savings equal core.usage's rows (a day staged again but not rebuilt fails).")
def agrees_with_core_usage(context: dg.AssetCheckExecutionContext, duckdb: DuckDBResource) -> dg.AssetCheckResult:
    """Counts the disagreeing days (must be 0); metadata lists them (ISO dates)."""
    window = run_window(context)
    with warehouse_connection(duckdb) as conn:
        if window is None:  # after staging: the pending days that were built before
            first, last = conn.execute("select min(day), max(day) from stage.pending_days").fetchall()[0]
            window = (first, last + timedelta(days=1)) if first else (date.min, date.min)
        violations, days = conn.execute(statement("checks/daily_savings__disagrees_with_usage"), {
            "start": window[0], "end": window[1], "built_only": run_window(context) is None}).fetchall()[0]
    # after staging a stale day is expected until the daily run rebuilds it: a failed WARN (shown as
    # failed, never green, without failing the ingest run); after the rebuild it is an ERROR that blocks
    severity = dg.AssetCheckSeverity.ERROR if run_window(context) else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(passed=violations == 0, severity=severity, metadata={
        "stale_days": int(violations), "days": dg.MetadataValue.json(days),
        "window": f"{window[0]} .. {window[1] - timedelta(days=1)}" if window[0] != date.min else "(nothing pending)",
        "predicate": "sql/checks/daily_savings__disagrees_with_usage.sql"})
