"""core.usage: the canonical usage rows of each UTC day, with catalogue model ids."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.ingest.assets import STAGED_USAGE
from pipelines.defs.daily import daily_asset, replace_window
from pipelines.defs.partitions import window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.lib import prices
from pipelines.lib.sql import statement


@daily_asset(["core", "usage"], deps=[STAGED_USAGE], group_name="core")
def core_usage(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Replace the window's rows of ``core.usage`` from ``stage.usage_rows`` (one transaction).

    Adds ``price_model``: the genai-prices catalogue id of each reported model (dated snapshots and
    Bedrock inference-profile ids resolve to their catalogue entry), else the model lower-cased.
    """
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        pairs = conn.execute(statement("core/usage__models_in_window"), params).fetchall()
        conn.register("model_map", prices.model_map_table(pairs))
        try:
            replace_window(conn, "core/usage__delete_window", "core/usage__insert_window", params)
        finally:
            conn.unregister("model_map")
        rows, requests = conn.execute(
            "select count(*), coalesce(sum(request_count), 0) from core.usage where day >= $start and day < $end",
            params).fetchall()[0]
    return dg.MaterializeResult(metadata={"dagster/row_count": rows, "requests": int(requests),
                                          "models": len(pairs), "window": f"{params['start']} .. {params['end']}"})
