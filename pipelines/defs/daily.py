"""What every daily (UTC-partitioned) warehouse asset shares: its decorator and the window rewrite."""

import functools
from datetime import timedelta
from decimal import Decimal

import dagster as dg
import duckdb

from pipelines.defs.catalog import table_spec
from pipelines.defs.partitions import daily_partitions, whole, window_parts
from pipelines.lib import faults, progress
from pipelines.lib.sql import params_for, statement
from pipelines.lib.warehouse import settle, transaction


def daily_asset(key: list[str], deps: list, check_specs: list | None = None, **extra):
    """``@dg.asset`` for a table rebuilt per UTC-day window: daily partitions, single-run backfills,
    DuckDB pool ``duckdb`` (one writer at a time), the checks it runs on the window it wrote, and the
    table's description and column schema from ``sql/schema`` (``catalog.table_spec``); ``extra`` goes
    to ``dg.asset`` as it is (a freshness policy, say). The step says it is building its table
    (``progress.doing``: the CLI's progress line names it during a long day)."""
    asset = dg.asset(key=key, deps=deps, partitions_def=daily_partitions,
                     backfill_policy=dg.BackfillPolicy.single_run(), kinds={"duckdb"}, pool="duckdb",
                     check_specs=check_specs, **table_spec(key), **extra)

    def decorate(compute):
        @functools.wraps(compute)  # Dagster reads the parameters and docstring through __wrapped__
        def announced(*args, **kwargs):
            progress.doing(f"building {'.'.join(key)}")
            return compute(*args, **kwargs)
        return asset(announced)
    return decorate


def add_day_metadata(context: dg.AssetExecutionContext, cursor: duckdb.DuckDBPyConnection, params: dict) -> int:
    """Give each partition of the run's window its own day's figures; returns the window's row count.

    ``cursor`` holds the rows of a query grouped by ``day`` (first column) with one named figure per
    other column. Integers stay integers, USD DECIMALs become floats (so the UI plots them) plus an
    ``<name>_exact`` text with every digit; a day of the window without rows gets zeros. A range run
    would otherwise show the window's totals on every day. ``dagster/row_count`` is the day's rows when
    the query has a ``rows`` column.
    """
    names = [d[0] for d in cursor.description][1:]
    by_day = {row[0]: dict(zip(names, row[1:])) for row in cursor.fetchall()}
    day, total = params["start"], 0
    while day < params["end"]:
        figures = by_day.get(day, {})
        metadata: dict = {}
        for name in names:
            value = figures.get(name) or 0
            if isinstance(value, Decimal):
                metadata[name], metadata[f"{name}_exact"] = float(value), dg.MetadataValue.text(f"{value}")
            else:
                metadata["dagster/row_count" if name == "rows" else name] = value
        total += int(figures.get("rows") or 0)
        context.add_asset_metadata(metadata, partition_key=day.isoformat())
        day += timedelta(days=1)
    return total


def replace_window(conn: duckdb.DuckDBPyConnection, delete_sql: str, insert_sql: str,
                   params: dict, insert_params: dict | None = None, in_parts: bool = False) -> None:
    """Delete the window's rows and insert them again in one transaction (idempotent partitions).

    ``delete_sql`` / ``insert_sql`` name files under ``sql/``; with ``in_parts`` the insert runs once per
    part of the window (``partitions.window_parts``: for a statement whose every day's rows depend on that
    day's rows alone; cut by request ids too where it takes ``$bucket``). On any error the transaction is rolled back, so readers never see a half-written day, and
    the error is raised again. The checkpoint after the commit merges part-filled row groups only when the
    delete removed rows (``warehouse.settle``): appending a new day rewrites no older rows.
    """
    with transaction(conn, settle_after=False):
        deleted = conn.execute(statement(delete_sql), params).fetchone()[0]
        faults.maybe_die(f"window:{insert_sql}")
        text = statement(insert_sql)
        for part in (window_parts(conn, insert_params or params, by_ids="$bucket" in text) if in_parts
                     else [insert_params or params]):
            conn.execute(text, params_for(text, whole(part)))
    settle(conn, compact=deleted > 0)


def rebuild_window(context: dg.AssetExecutionContext, conn: duckdb.DuckDBPyConnection, sql: str, table: str,
                   figures: str, params: dict, insert_params: dict | None = None, in_parts: bool = False) -> int:
    """Rebuild the window's rows of ``table`` and give each day of the window its own figures.

    ``sql`` names the pair ``sql/<sql>__delete_window.sql`` / ``__insert_window.sql`` run by
    ``replace_window``; ``figures`` is the select list of per-day aggregates of ``table`` that follows
    ``count(*) as rows`` (e.g. ``"coalesce(sum(ttft_requests), 0) as ttft_requests"``), shown by
    ``add_day_metadata``; ``in_parts`` as for ``replace_window``. Returns the window's row count; errors
    are ``replace_window``'s.
    """
    replace_window(conn, f"{sql}__delete_window", f"{sql}__insert_window", params, insert_params, in_parts)
    return add_day_metadata(context, conn.execute(
        f"select day, count(*) as rows, {figures} from {table} where day >= $start and day < $end group by day",
        params), params)
