"""marts.whatif_routing (routing policies over n cards) and marts.whatif_cache_ttl (5-minute vs 1-hour writes)."""

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipelines.defs.daily import add_day_metadata, daily_asset, replace_window
from pipelines.defs.partitions import window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.lib.sql import statement
from pipelines.lib.warehouse import transaction
from pipelines.lib.whatif import routing, routing_inputs

MART_CARDS = (4, 8)  # card counts the routing mart compares (the CLI takes any --cards); each replay of a
# day costs about 3 s per million requests (measured), so the mart costs about 6 x that per day

USAGE = dg.AssetKey(["core", "usage"])
COSTS = dg.AssetKey(["core", "usage_costs"])


def routing_rows(by_day: dict) -> pa.Table:
    """Rows of ``marts.whatif_routing`` for each day's requests: every policy over each of ``MART_CARDS``."""
    rows = []
    for day, requests in sorted(by_day.items()):
        prompt = sum(r.prompt_tokens for r in requests)
        for cards in MART_CARDS:
            for policy in routing.POLICIES:
                result = routing.replay(requests, cards, policy).as_dict()
                rows.append({"day": day, "policy": policy, "cards": cards, "requests": len(requests),
                             "prompt_tokens": prompt, **result})
    schema = pa.schema([("day", pa.date32()), ("policy", pa.string()), ("cards", pa.int32()), ("requests", pa.int64()),
                        ("prompt_tokens", pa.int64()), ("token_hit_rate", pa.float64()), ("prefill_tokens", pa.int64()),
                        ("busiest_card_request_share", pa.float64()), ("busiest_card_prefill_share", pa.float64()),
                        ("resident_copies_max", pa.int32()), ("evicted_tokens", pa.int64())])
    return pa.Table.from_pylist(rows, schema=schema)


@daily_asset(["marts", "whatif_routing"], deps=[USAGE])
def whatif_routing(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Replay each day of the window under every routing policy over ``MART_CARDS`` cards (in Python)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        table = routing_rows(routing_inputs.usage_requests(conn, params["start"], params["end"]))
        with transaction(conn):
            conn.execute(statement("whatif/routing__delete_window"), params)
            conn.register("routing_rows", table)
            try:
                conn.execute(statement("whatif/routing__insert_rows"))
            finally:
                conn.unregister("routing_rows")
        rows = add_day_metadata(context, conn.execute(
            "select day, count(*) as rows, max(token_hit_rate) filter (where policy = 'prefix_hash') as prefix_hash_hit_rate, "
            "max(token_hit_rate) filter (where policy = 'round_robin') as round_robin_hit_rate "
            "from marts.whatif_routing where day >= $start and day < $end group by day", params), params)
    return dg.MaterializeResult(metadata={"window_rows": rows, "cards": list(MART_CARDS)})


@daily_asset(["marts", "whatif_cache_ttl"], deps=[USAGE, COSTS])
def whatif_cache_ttl(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Rebuild the window's rows of ``marts.whatif_cache_ttl`` (set-based SQL, exact USD)."""
    params = window_params(context)
    with warehouse_connection(duckdb) as conn:
        replace_window(conn, "whatif/cache_ttl__delete_window", "whatif/cache_ttl__insert_window", params)
        rows = add_day_metadata(context, conn.execute(
            "select day, count(*) as rows, coalesce(sum(greatest(saving_usd, 0)) filter (where ttl_option <> current_ttl), 0) "
            "as switch_saving_usd from marts.whatif_cache_ttl where day >= $start and day < $end group by day", params), params)
    return dg.MaterializeResult(metadata={"window_rows": rows})
