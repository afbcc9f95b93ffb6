"""marts.cache_alerts: incidents such as a drop of the token hit rate against its trailing baseline."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.partitions import daily_partitions, window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings
from pipelines.lib.sql import statement


@dg.asset(
    key=["marts", "cache_alerts"],
    deps=[dg.AssetKey(["core", "usage"]), dg.AssetKey(["core", "usage_costs"])],
    partitions_def=daily_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="alerts",
    kinds={"duckdb"},
    pool="duckdb",
)
def cache_alerts(context: dg.AssetExecutionContext, duckdb: DuckDBResource,
                 settings: CachemeterSettings) -> dg.MaterializeResult:
    """Recompute the window's ``hit_rate_drop`` alerts (stable ``alert_id``: re-runs never duplicate)."""
    params = window_params(context)
    rule_params = {**params, "min_drop": settings.alert_min_drop, "critical_drop": settings.alert_critical_drop,
                   "min_requests": settings.alert_min_requests, "baseline_days": settings.alert_baseline_days}
    with warehouse_connection(duckdb) as conn:
        conn.execute("begin transaction")
        conn.execute(statement("alerts/cache_alerts__delete_window"), params)
        conn.execute(statement("alerts/cache_alerts__insert_hit_rate_drop"), rule_params)
        conn.execute("commit")
        alerts = conn.execute("select day, severity, message from marts.cache_alerts "
                              "where day >= $start and day < $end order by day, severity", params).fetchall()
    for day, severity, message in alerts:
        context.log.warning(f"{day} {severity}: {message}")
    table = "\n".join(["| day | severity | message |", "|---|---|---|"] + [f"| {d} | {s} | {m} |" for d, s, m in alerts])
    return dg.MaterializeResult(metadata={"dagster/row_count": len(alerts), "alerts": dg.MetadataValue.md(table)})
