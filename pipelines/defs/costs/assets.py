"""core.usage_costs: cost, no-cache cost, savings and write premium of every usage row."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.daily import daily_asset, replace_window
from pipelines.defs.partitions import window_params
from pipelines.defs.pricing.assets import CACHE_MINIMUMS, PRICES
from pipelines.defs.resources import warehouse_connection


@daily_asset(["core", "usage_costs"], deps=[dg.AssetKey(["core", "usage"]), PRICES, CACHE_MINIMUMS], group_name="core")
def core_usage_costs(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Price the window's usage rows set-wise (``sql/costs/usage_costs__insert_window.sql``); USD DECIMAL."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        replace_window(conn, "costs/usage_costs__delete_window", "costs/usage_costs__insert_window", params)
        rows, unpriced, cost, savings = conn.execute(
            "select count(*), count(*) filter (where not priced), coalesce(sum(cost_usd), 0), "
            "coalesce(sum(savings_usd), 0) from core.usage_costs where day >= $start and day < $end",
            params).fetchall()[0]
        reasons = conn.execute(
            "select unpriced_reason, count(*) from core.usage_costs where day >= $start and day < $end "
            "and not priced group by 1 order by 2 desc limit 10", params).fetchall()
    metadata = {"dagster/row_count": rows, "unpriced_rows": unpriced, "cost_usd": f"{cost:.6f}",
                "savings_usd": f"{savings:.6f}"}
    if reasons:
        metadata["unpriced_reasons"] = dg.MetadataValue.md(
            "\n".join(["| reason | rows |", "|---|---:|"] + [f"| {r} | {n} |" for r, n in reasons]))
    return dg.MaterializeResult(metadata=metadata)
