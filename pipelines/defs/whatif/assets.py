"""marts.whatif_routing (routing policies over n cards) and marts.whatif_cache_ttl (5-minute vs 1-hour writes)."""

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.daily import add_day_metadata, daily_asset, rebuild_window
from pipelines.defs.partitions import window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.lib.whatif import routing_mart
from pipelines.lib.whatif.routing_mart import MART_CARDS

USAGE = dg.AssetKey(["core", "usage"])
COSTS = dg.AssetKey(["core", "usage_costs"])


@daily_asset(["marts", "whatif_routing"], deps=[USAGE])
def whatif_routing(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Replay each day of the window whose usage changed under every routing policy over ``MART_CARDS``
    cards (in Python; ``routing_mart.refresh``: a day whose inputs are unchanged keeps its rows)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        done = routing_mart.refresh(conn, params["start"], params["end"])
        rows = add_day_metadata(context, conn.execute(
            "select day, count(*) as rows, max(token_hit_rate) filter (where policy = 'prefix_hash') as prefix_hash_hit_rate, "
            "max(token_hit_rate) filter (where policy = 'round_robin') as round_robin_hit_rate "
            "from marts.whatif_routing where day >= $start and day < $end group by day", params), params)
    return dg.MaterializeResult(metadata={"window_rows": rows, "cards": list(MART_CARDS),
                                          "replayed_days": done.replayed_days, "kept_days": done.kept_days,
                                          "removed_days": done.removed_days})


@daily_asset(["marts", "whatif_cache_ttl"], deps=[USAGE, COSTS])
def whatif_cache_ttl(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Rebuild the window's rows of ``marts.whatif_cache_ttl`` (set-based SQL, exact USD)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        rows = rebuild_window(context, conn, "whatif/cache_ttl", "marts.whatif_cache_ttl",
                              "coalesce(sum(greatest(saving_usd, 0)) filter (where ttl_option <> current_ttl), 0) "
                              "as switch_saving_usd", params)
    return dg.MaterializeResult(metadata={"window_rows": rows})
