"""Resources: one DuckDB warehouse (``duckdb``) and the run settings (``settings``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipelines.defs.settings import CachemeterSettings, database_path
from pipelines.lib import warehouse


@contextmanager
def warehouse_connection(resource: DuckDBResource) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection from the resource with UTC set and the schema created (see ``lib.warehouse``)."""
    with resource.get_connection() as conn:
        yield warehouse.prepare(conn)


@dg.definitions
def resources() -> dg.Definitions:
    """Register the warehouse and settings; both read ``CACHEMETER_*`` variables when loaded."""
    database = Path(database_path())
    database.parent.mkdir(parents=True, exist_ok=True)  # DuckDB creates the file, not its folder
    return dg.Definitions(resources={
        "duckdb": DuckDBResource(database=str(database), connection_config=warehouse.CONNECTION_CONFIG),
        "settings": CachemeterSettings.from_env(),
    })
