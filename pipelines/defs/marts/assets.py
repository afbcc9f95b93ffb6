"""marts.daily_savings (what caching saved), marts.prefix_families, marts.cost_reconciliation (billed vs computed),
marts.ttft_by_family (time to first token of cache hits against misses)."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs import checks
from pipelines.defs.daily import daily_asset, rebuild_window
from pipelines.defs.partitions import window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings


SAVINGS = ["marts", "daily_savings"]


@daily_asset(SAVINGS, deps=[dg.AssetKey(["core", "usage"]), dg.AssetKey(["core", "usage_costs"])],
             check_specs=[
                 checks.invariant_spec(SAVINGS, "totals_equal_line_items", "daily totals = sum of request rows, exactly"),
                 checks.distribution_spec(SAVINGS, "savings_distributions", "hit rates within [0, 1] (Great Expectations)"),
             ])
def daily_savings(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Rebuild the window's rows of ``marts.daily_savings``, part by part (it joins usage and cost rows);
    metadata previews the window's totals."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        rows = rebuild_window(context, conn, "marts/daily_savings", "marts.daily_savings",
                              "sum(requests) as requests, sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0) "
                              "as token_hit_rate, sum(cost_usd) as cost_usd, sum(no_cache_cost_usd) as no_cache_cost_usd, "
                              "sum(savings_usd) as savings_usd", params, in_parts=True)
        preview = conn.execute(
            "select day, sum(requests), sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0), sum(cost_usd), "
            "sum(no_cache_cost_usd), sum(savings_usd) from marts.daily_savings "
            "where day >= $start and day < $end group by day order by day", params).fetchall()
        results = [
            checks.invariant(conn, SAVINGS, "totals_equal_line_items", "daily_savings__totals_differ_from_line_items", params,
                             in_parts=True),
            checks.distribution(conn, SAVINGS, "savings_distributions",
                                "select token_hit_rate, request_hit_rate from marts.daily_savings "
                                "where day >= $start and day < $end", params, [
                                    checks.gx().ExpectColumnValuesToBeBetween(column="token_hit_rate", min_value=0, max_value=1),
                                    checks.gx().ExpectColumnValuesToBeBetween(column="request_hit_rate", min_value=0, max_value=1),
                                ]),
        ]
    table = "\n".join(["| day | requests | token hit rate | cost USD | no-cache USD | savings USD |",
                       "|---|---:|---:|---:|---:|---:|"]
                      + [f"| {d} | {r} | {h or 0:.1%} | {c:.2f} | {n:.2f} | {s:.2f} |" for d, r, h, c, n, s in preview])
    return dg.MaterializeResult(metadata={"window_rows": rows, "preview": dg.MetadataValue.md(table)},
                                check_results=results)


@daily_asset(["marts", "cost_reconciliation"], deps=[dg.AssetKey(["core", "usage"]), dg.AssetKey(["core", "usage_costs"])])
def cost_reconciliation(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Rebuild the window's rows of ``marts.cost_reconciliation`` (reported billed cost vs computed, USD)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        rows = rebuild_window(context, conn, "marts/cost_reconciliation", "marts.cost_reconciliation",
                              "coalesce(sum(reported_cost_usd), 0) as reported_cost_usd, "
                              "coalesce(sum(computed_cost_usd), 0) as computed_cost_usd", params, in_parts=True)
    return dg.MaterializeResult(metadata={"window_rows": rows})


@daily_asset(["marts", "ttft_by_family"], deps=[dg.AssetKey(["core", "usage"])])
def ttft_by_family(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Rebuild the window's rows of ``marts.ttft_by_family`` (median and p95 TTFT, hits vs misses, ms)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        rows = rebuild_window(context, conn, "marts/ttft_by_family", "marts.ttft_by_family",
                              "coalesce(sum(ttft_requests), 0) as ttft_requests, "
                              "coalesce(sum(bad_latency_requests), 0) as bad_latency_requests", params)
    return dg.MaterializeResult(metadata={"window_rows": rows})


@daily_asset(["marts", "prefix_families"], deps=[dg.AssetKey(["core", "usage"]), dg.AssetKey(["core", "usage_costs"])])
def prefix_families(context: dg.AssetExecutionContext, duckdb: DuckDBResource,
                    settings: CachemeterSettings) -> dg.MaterializeResult:
    """Rebuild the window's rows of ``marts.prefix_families`` (hit rate and lost savings per family)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        rows = rebuild_window(context, conn, "marts/prefix_families", "marts.prefix_families",
                              "count(distinct prefix_family) as families, "
                              "coalesce(sum(lost_savings_usd), 0) as lost_savings_usd",
                              params, {**params, "alert_baseline_days": settings.alert_baseline_days})
    return dg.MaterializeResult(metadata={"window_rows": rows})
