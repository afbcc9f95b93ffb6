"""Resources: one DuckDB warehouse (``duckdb``) and the run settings (``settings``).

The warehouse path and the logs folder are ``dg.EnvVar`` values, resolved when a run (or sensor tick)
starts, not when the code loads: ``CACHEMETER_DB`` (an absolute path, or ``ducklake:<catalog>``) and ``CACHEMETER_LOGS`` must be
set where the code location runs (the CLI sets both from its options; ``make dagster-dev`` points them
at the bundled demo; a deployment sets its own). A missing variable fails the run with Dagster's
message naming it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import lake, warehouse


# a DuckLake write that met another process's rewrite of the same table (pipelines/parallel_days.py) is run
# again: up to this many times, after a random 1-5 s, so two processes in step do not meet again
CONFLICT_RETRIES = 8


class WarehousePathError(ValueError):
    """``CACHEMETER_DB`` is not an absolute path (a relative one would follow the working directory), or names a
    file after one of the warehouse's schemas (``warehouse.refuse_schema_name``)."""


def warehouse_path(resource: DuckDBResource) -> Path | str:
    """The resource's warehouse: its file, or its DuckLake target (``ducklake:<catalog>``, ``lib/lake.py``)
    as given; raises ``WarehousePathError`` when ``CACHEMETER_DB`` (or a DuckLake catalog file) is relative, or a
    file named after a schema (``core.duckdb``)."""
    if lake.is_lake(resource.database):
        file = lake.catalog_file(resource.database)
        if file is not None and not file.is_absolute():
            raise WarehousePathError(f"CACHEMETER_DB must name its catalog by an absolute path, got {resource.database!r}")
        return resource.database
    database = Path(resource.database)
    if not database.is_absolute():
        raise WarehousePathError(f"CACHEMETER_DB must be an absolute path, got {resource.database!r}")
    try:
        warehouse.refuse_schema_name(database)
        warehouse.refuse_shared_snapshot(database)
    except ValueError as exc:
        raise WarehousePathError(f"CACHEMETER_DB: {exc}") from None
    return database


@contextmanager
def warehouse_connection(resource: DuckDBResource) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection from the resource with UTC set and the schema created (see ``lib.warehouse``).

    Raises ``WarehousePathError`` when the resource's path is relative; creates the file's folder. When
    another process holds the file's write lock (a CLI run beside a scheduled one), the step asks Dagster
    to run it again later (``dg.RetryRequested``: up to 5 times, 30 s apart, each retry in the run's log)
    instead of failing the run. A DuckLake transaction conflict raised in the block (two processes
    rewriting the same table at once: DuckLake re-commits non-conflicting changes itself, not a delete
    met by a concurrent insert) is retried the same way (``CONFLICT_RETRIES``); every window rewrite is
    idempotent, so the step's second run writes what its first would have.
    """
    database = warehouse_path(resource)
    with ExitStack() as stack:
        try:
            # opened here rather than by ``resource.get_connection()``, whose own silent retries of the
            # open (10 tries, about 100 s) would come before Dagster's visible, bounded ones below
            conn = stack.enter_context(_open(database, resource.connection_config))
        except duckdb.IOException as exc:
            holder = warehouse.lock_holder(exc)
            if holder is None:
                raise
            raise dg.RetryRequested(max_retries=5, seconds_to_wait=30) from warehouse.WarehouseBusyError(
                f"the warehouse {database} is in use by {holder}")
        try:
            yield warehouse.prepare(conn)
        except duckdb.TransactionException as exc:
            if "transaction conflict" not in str(exc).lower():
                raise
            raise dg.RetryRequested(max_retries=CONFLICT_RETRIES, seconds_to_wait=random.uniform(1, 5)) from exc


def _open(database: Path | str, config: dict) -> duckdb.DuckDBPyConnection:
    if lake.is_lake(database):
        return warehouse.connect(database)  # the process's shared instance of the lake, prepared
    database.parent.mkdir(parents=True, exist_ok=True)  # DuckDB creates the file, not its folder
    return duckdb.connect(str(database), config={"custom_user_agent": "dagster", **config})


@dg.definitions
def resources() -> dg.Definitions:
    """Register the warehouse and settings (paths resolved at run time, thresholds from ``cachemeter.yaml``)."""
    return dg.Definitions(resources={
        "duckdb": DuckDBResource(database=dg.EnvVar("CACHEMETER_DB"), connection_config=warehouse.CONNECTION_CONFIG),
        "settings": CachemeterSettings.deferring_errors(logs_dir=dg.EnvVar("CACHEMETER_LOGS")),
    })
