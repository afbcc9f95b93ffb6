"""core.prices and core.cache_minimums: the price book and the minimum cacheable prompt lengths."""


from pathlib import Path

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipelines.defs.catalog import table_spec
from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import prices, progress, warehouse
from pipelines.lib.sql import statement
from pipelines.lib.warehouse import transaction

PRICES = dg.AssetKey(["core", "prices"])
CACHE_MINIMUMS = dg.AssetKey(["core", "cache_minimums"])
CACHE_MINIMUMS_CSV = Path(prices.__file__).with_name("cache_minimums.csv")


@dg.multi_asset(
    specs=[
        dg.AssetSpec(PRICES, kinds={"duckdb"}, **table_spec(["core", "prices"])),
        dg.AssetSpec(CACHE_MINIMUMS, kinds={"duckdb"}, **table_spec(["core", "cache_minimums"])),
    ],
    pool="duckdb",
)
def price_book(context: dg.AssetExecutionContext, duckdb: DuckDBResource, settings: CachemeterSettings):
    """Rebuild the price book from the catalogue and ``settings.prices_file``.

    Raises ``prices.PriceOverrideError`` (naming file and line) for a bad override file.
    """
    override_file = Path(settings.prices_file) if settings.prices_file else None
    try:
        version = prices.book_fingerprint(override_file, CACHE_MINIMUMS_CSV)
    except OSError:  # an override file that cannot be read: read_overrides says so below
        version = None
    with warehouse_connection(duckdb) as conn:
        loaded, had_prices = conn.execute(statement("pricing/price_book__get")).fetchall()[0]
        minimums = conn.execute("select count(*) from core.cache_minimums").fetchall()[0][0]
    if version is not None and loaded == version and had_prices:  # the same book: nothing to load again
        yield dg.MaterializeResult(asset_key=PRICES, metadata={
            "catalogue": prices.catalogue_source(), "override_file": settings.prices_file or "(none)", "unchanged": True})
        yield dg.MaterializeResult(asset_key=CACHE_MINIMUMS, metadata={"dagster/row_count": minimums})
        return
    table = prices.catalogue_table()
    overrides = prices.read_overrides(override_file) if override_file else None
    if overrides is not None:
        table = pa.concat_tables([table, overrides])
    repriced = 0
    with warehouse_connection(duckdb) as conn:
        conn.register("prices_in", table)
        try:
            with transaction(conn):
                # an empty book has nothing to compare with (its first load prices every staged day anyway)
                before = conn.execute(statement("pricing/prices__fingerprint")).fetchall()[0][0] if had_prices else None
                conn.execute(statement("pricing/prices__delete"))
                conn.execute(statement("pricing/prices__insert"))
                conn.execute(statement("pricing/cache_minimums__delete"))
                conn.execute(statement("pricing/cache_minimums__insert"), {"path": str(CACHE_MINIMUMS_CSV)})
                if before is None or conn.execute(statement("pricing/prices__fingerprint")).fetchall()[0][0] != before:
                    conn.execute(statement("core/pending_days__insert_all"))  # every staged day is repriced
                    if had_prices:
                        repriced = conn.execute("select count(distinct day) from core.usage").fetchall()[0][0]
                if version is not None:
                    conn.execute(statement("pricing/price_book__set"), {"fingerprint": version})
        finally:
            conn.unregister("prices_in")
        warehouse.record_unbuilt_days(conn, duckdb.database)  # a changed price book made every staged day pending
        minimums = conn.execute("select count(*) from core.cache_minimums").fetchall()[0][0]
    if repriced:  # a dropped or edited --prices, or a new genai-prices: history's costs change, said once
        changed = (f"the price book changed since the last run (overrides now: "
                   f"{settings.prices_file or 'none'}; catalogue: {prices.catalogue_source()}): "
                   f"all {repriced} staged UTC day(s) are repriced")
        context.log.warning(changed)
        progress.warn(changed)
    yield dg.MaterializeResult(asset_key=PRICES, metadata={
        "dagster/row_count": table.num_rows, "catalogue": prices.catalogue_source(),
        "override_rows": 0 if overrides is None else overrides.num_rows,
        "override_file": settings.prices_file or "(none)"})
    yield dg.MaterializeResult(asset_key=CACHE_MINIMUMS, metadata={"dagster/row_count": minimums})
