"""warehouse snapshot: a read-only copy of the warehouse published after every run, for readers."""

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.resources import warehouse_connection
from pipelines.lib import warehouse


@dg.asset(
    key=["publish", "warehouse_snapshot"],
    deps=[dg.AssetKey(["marts", "daily_savings"]), dg.AssetKey(["marts", "prefix_families"]),
          dg.AssetKey(["marts", "cache_alerts"]), dg.AssetKey(["core", "quarantine"])],
    group_name="publish",
    kinds={"duckdb"},
    pool="duckdb",
)
def warehouse_snapshot(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Checkpoint and copy the warehouse to ``<name>.snapshot.duckdb`` (atomic rename).

    ``cachemeter sql`` and any DuckDB client opened read-only read the snapshot, so they answer while
    the next run holds the warehouse's single-writer lock.
    """
    with warehouse_connection(duckdb) as conn:
        target = warehouse.publish_snapshot(conn, duckdb.database)
    return dg.MaterializeResult(metadata={"snapshot": str(target), "bytes": target.stat().st_size})
