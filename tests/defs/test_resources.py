"""The warehouse resource: an absolute path, and a held file retried by Dagster instead of failing the run."""

import dagster as dg
import pytest
from dagster_duckdb import DuckDBResource

from tests.test_reliability import hold_warehouse


def test_a_step_that_finds_the_warehouse_held_asks_dagster_to_retry_it(tmp_path):
    from pipelines.defs.resources import warehouse_connection
    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()
    holder = hold_warehouse(db)
    try:
        with pytest.raises(dg.RetryRequested) as raised:
            with warehouse_connection(DuckDBResource(database=str(db))):
                pass
    finally:
        holder.kill()
        holder.wait()
    assert raised.value.max_retries == 5 and raised.value.seconds_to_wait == 30
    assert f"is in use by PID {holder.pid}" in str(raised.value.__cause__)
    with warehouse_connection(DuckDBResource(database=str(db))) as conn:  # free again: opens
        assert conn.execute("select 1").fetchall() == [(1,)]


def test_a_relative_warehouse_path_is_refused_with_its_name(tmp_path):
    from pipelines.defs.resources import WarehousePathError, warehouse_connection

    with pytest.raises(WarehousePathError, match="CACHEMETER_DB must be an absolute path, got 'warehouse/w.duckdb'"):
        with warehouse_connection(DuckDBResource(database="warehouse/w.duckdb")):
            pass


def test_a_warehouse_file_named_after_a_schema_is_refused_before_it_is_created(tmp_path):
    """DuckDB names the catalog after the file: in core.duckdb every core.<table> is ambiguous (a Binder Error
    inside the step before this check); the deployment's step now fails on its setting, naming a working name."""
    from pipelines.defs.resources import WarehousePathError, warehouse_connection

    for name in ("core.duckdb", "Marts.duckdb", "stage.duckdb"):
        with pytest.raises(WarehousePathError, match=f"CACHEMETER_DB: the warehouse file {name} is named after"):
            with warehouse_connection(DuckDBResource(database=str(tmp_path / name))):
                pass
        assert not (tmp_path / name).exists()
    with warehouse_connection(DuckDBResource(database=str(tmp_path / "cores.duckdb"))) as conn:  # only the exact names
        assert conn.execute("select count(*) from core.usage").fetchall() == [(0,)]
