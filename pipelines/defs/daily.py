"""What every daily (UTC-partitioned) warehouse asset shares: its decorator and the window rewrite."""

import dagster as dg
import duckdb

from pipelines.defs.partitions import daily_partitions
from pipelines.lib import faults
from pipelines.lib.sql import statement
from pipelines.lib.warehouse import transaction


def daily_asset(key: list[str], deps: list, group_name: str, check_specs: list | None = None):
    """``@dg.asset`` for a table rebuilt per UTC-day window: daily partitions, single-run backfills,
    DuckDB pool ``duckdb`` (one writer at a time), and the checks it runs on the window it wrote."""
    return dg.asset(key=key, deps=deps, partitions_def=daily_partitions,
                    backfill_policy=dg.BackfillPolicy.single_run(), group_name=group_name,
                    kinds={"duckdb"}, pool="duckdb", check_specs=check_specs)


def replace_window(conn: duckdb.DuckDBPyConnection, delete_sql: str, insert_sql: str,
                   params: dict, insert_params: dict | None = None) -> None:
    """Delete the window's rows and insert them again in one transaction (idempotent partitions).

    ``delete_sql`` / ``insert_sql`` name files under ``sql/``; on any error the transaction is
    rolled back, so readers never see a half-written day, and the error is raised again.
    """
    with transaction(conn):
        conn.execute(statement(delete_sql), params)
        faults.maybe_die(f"window:{insert_sql}")
        conn.execute(statement(insert_sql), insert_params or params)
