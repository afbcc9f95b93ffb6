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
