"""core.usage: the canonical usage rows of each UTC day, with catalogue model ids.

Staging writes the rows (one file at a time); this daily asset owns the day's partition: it
re-resolves catalogue ids for the window and runs the table's checks on it."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.ingest.assets import STAGED_FILES
from pipelines.defs import checks
from pipelines.defs.nightly.schedules import USAGE_FRESHNESS
from pipelines.defs.daily import add_day_metadata, daily_asset
from pipelines.defs.partitions import window_label, window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.lib import prices
from pipelines.lib.sql import statement


KEY = ["core", "usage"]


@daily_asset(KEY, deps=[STAGED_FILES], freshness_policy=USAGE_FRESHNESS, check_specs=[
    checks.invariant_spec(KEY, "token_classes_sum_to_prompt", "uncached + cache read + writes = prompt; no negative counts"),
    checks.invariant_spec(KEY, "request_id_unique", "each request_id occurs once in core.usage"),
    checks.distribution_spec(KEY, "usage_distributions", "known providers, plausible token counts (Great Expectations)"),
])
def core_usage(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Re-resolve ``price_model`` of the window's ``core.usage`` rows and check the window.

    ``price_model`` is the genai-prices catalogue id of each reported model (dated snapshots and Bedrock
    inference-profile ids resolve to their catalogue entry), else the model lower-cased. Staging set it
    with the same resolver, so rows change only after a catalogue upgrade (one UPDATE statement). The rows
    themselves are not copied: staging stored them here (the day was once stored twice, 5 s per 5M rows).
    """
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        pairs = conn.execute(statement("core/usage__models_in_window"), params).fetchall()
        conn.register("model_map", prices.model_map_table(pairs))
        try:
            resolved = conn.execute(statement("core/usage__update_price_models"), params).fetchall()[0][0]
        finally:
            conn.unregister("model_map")
        rows = add_day_metadata(context, conn.execute(
            "select day, count(*) as rows, sum(request_count) as requests, count(distinct model) as models "
            "from core.usage where day >= $start and day < $end group by day", params), params)
        results = [
            checks.invariant(conn, KEY, "token_classes_sum_to_prompt", "usage__token_classes_do_not_close", params),
            checks.invariant(conn, KEY, "request_id_unique", "usage__duplicate_request_ids", params,
                             in_id_buckets=True),
            checks.distribution(conn, KEY, "usage_distributions",
                                # per-request bounds: usage buckets (request_count <> 1) sum many requests
                                "select provider, case when request_count = 1 then prompt_tokens end as prompt_tokens, "
                                "case when request_count = 1 then output_tokens end as output_tokens, "
                                "cache_read_tokens / nullif(prompt_tokens, 0) as read_share "
                                "from core.usage where day >= $start and day < $end", params, [
                                    checks.gx().ExpectColumnValuesToBeInSet(column="provider", value_set=checks.KNOWN_PROVIDERS),
                                    checks.gx().ExpectColumnValuesToBeBetween(column="prompt_tokens", min_value=0, max_value=10_000_000),
                                    checks.gx().ExpectColumnValuesToBeBetween(column="output_tokens", min_value=0, max_value=1_000_000),
                                    checks.gx().ExpectColumnValuesToBeBetween(column="read_share", min_value=0, max_value=1),
                                ]),
        ]
    return dg.MaterializeResult(metadata={"window_rows": rows, "price_models_changed": resolved,
                                          "window": window_label(params)},
                                check_results=results)
