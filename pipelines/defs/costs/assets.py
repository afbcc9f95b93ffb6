"""core.usage_costs: cost, no-cache cost, savings and write premium of every usage row."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs import checks
from pipelines.defs.daily import daily_asset, rebuild_window
from pipelines.defs.partitions import window_label, window_params
from pipelines.defs.pricing.assets import CACHE_MINIMUMS, PRICES
from pipelines.defs.resources import warehouse_connection
from pipelines.lib.sql import statement


KEY = ["core", "usage_costs"]


@daily_asset(KEY, deps=[dg.AssetKey(["core", "usage"]), PRICES, CACHE_MINIMUMS], check_specs=[
    checks.invariant_spec(KEY, "priced_rows_equal_usage_rows",
                         "one cost row per usage row, none extra, pricing its tokens and billed amount"),
    checks.invariant_spec(KEY, "cost_equals_tokens_times_prices", "cost = sum of tokens x applied prices, exactly"),
    checks.distribution_spec(KEY, "cost_distributions", "costs non-negative and plausible per request (Great Expectations)"),
])
def core_usage_costs(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Price the window's usage rows set-wise (``sql/costs/usage_costs__insert_window.sql``); USD DECIMAL.

    The window's price choices per pricing key go to a temp table first
    (``sql/costs/price_choices__create.sql``), so the pricing join builds its hash table over the keys,
    never over the usage rows, whatever the planner's estimates. The insert and the check that joins
    usage and cost rows (priced once) run part by part (``partitions.window_parts``: a part's hash table, not the
    window's); the cost check reads the cost rows alone (they carry the quantities they priced).
    """
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        conn.execute(statement("costs/price_choices__create"), params)
        rows = rebuild_window(context, conn, "costs/usage_costs", "core.usage_costs",
                              "count(*) filter (where not priced) as unpriced_rows, "
                              "coalesce(sum(cost_usd), 0) as cost_usd, coalesce(sum(savings_usd), 0) as savings_usd", params,
                              in_parts=True)
        conn.execute("drop table price_choices")
        reasons = conn.execute(
            "select unpriced_reason, count(*) from core.usage_costs where day >= $start and day < $end "
            "and not priced group by 1 order by 2 desc limit 10", params).fetchall()
        results = [
            checks.invariant(conn, KEY, "priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once", params,
                             in_parts=True),
            checks.invariant(conn, KEY, "cost_equals_tokens_times_prices", "usage_costs__cost_not_tokens_times_prices", params),
            checks.distribution(conn, KEY, "cost_distributions",
                                # per-request bounds only for rows that are one request (buckets sum many);
                                # the cost table alone (it carries request_count): no join to sample from
                                "select case when request_count = 1 then cost_usd::double end as cost_usd, "
                                "case when request_count = 1 then no_cache_cost_usd::double end as no_cache_cost_usd, "
                                "cache_outcome from core.usage_costs where day >= $start and day < $end and priced", params, [
                                    # a single request above $100 is implausible for any catalogue model today
                                    checks.gx().ExpectColumnValuesToBeBetween(column="cost_usd", min_value=0, max_value=100),
                                    checks.gx().ExpectColumnValuesToBeBetween(column="no_cache_cost_usd", min_value=0, max_value=100),
                                    checks.gx().ExpectColumnValuesToBeInSet(column="cache_outcome",
                                                                            value_set=["hit", "write", "miss", "ineligible"]),
                                ]),
        ]
    metadata = {"window_rows": rows, "window": window_label(params)}
    if reasons:
        metadata["unpriced_reasons"] = dg.MetadataValue.md(
            "\n".join(["| reason | rows |", "|---|---:|"] + [f"| {r} | {n} |" for r, n in reasons]))
    return dg.MaterializeResult(metadata=metadata, check_results=results)
