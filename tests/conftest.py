"""Shared test helpers: paths to the team's shared data, log writers and an in-process pipeline run."""

from __future__ import annotations

import csv
import gzip
import json
import os
from collections.abc import Iterable
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
# the team's shared data sits beside the repository (CI too); CACHEMETER_SHARED_DIR points elsewhere
SHARED = Path(os.environ.get("CACHEMETER_SHARED_DIR", REPO.parent / "shared"))

# the report's JavaScript bundle cache (pipelines/lib/report.py) inside the repository's pytest cache,
# not the user's home; subprocesses inherit it
os.environ.setdefault("CACHEMETER_CACHE_DIR", str(REPO / ".pytest_cache" / "cachemeter"))

PRICE_HEADER = ["provider", "model", "effective_from", "input_per_mtok", "cache_read_per_mtok",
                "cache_write_5m_per_mtok", "cache_write_1h_per_mtok", "output_per_mtok"]


@pytest.fixture(scope="session")
def shared() -> Path:
    """The team's shared data folder (../shared beside the repository; CI has it too)."""
    assert SHARED.is_dir(), f"shared data folder {SHARED} is missing: tests read real data from it"
    return SHARED


def write_jsonl(path: Path, records: Iterable, gz: bool = False) -> Path:
    """Write records (dicts are JSON-encoded, strings written as-is) one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def write_prices(path: Path, rows: Iterable[dict]) -> Path:
    """Write a --prices override CSV; missing price keys become empty cells (not offered)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        rows = list(rows)
        header = PRICE_HEADER + (["price_variant"] if any("price_variant" in row for row in rows) else [])
        writer.writerow(header)
        for row in rows:
            writer.writerow([row.get(column, "") for column in header])
    return path


@pytest.fixture(autouse=True)
def _cachemeter_variables_restored():
    """Each test ends with the ``CACHEMETER_*`` variables it began with: ``run_pipeline`` sets them in this process
    (``runner.configure``), and a test that failed before undoing them left its data path to the next test's
    subprocesses (a lake run then wrote to another test's folder; found by a fresh-clone run)."""
    before = {name: value for name, value in os.environ.items() if name.startswith("CACHEMETER_")}
    yield
    for name in [name for name in os.environ if name.startswith("CACHEMETER_") and name not in before]:
        del os.environ[name]
    os.environ.update(before)


def run_pipeline(tmp_path: Path, logs: Path, prices: Path | None = None, follow_symlinks: bool = False,
                 db: str | None = None, data_path: str | None = None) -> Path | str:
    """Run the whole pipeline in-process (ephemeral Dagster instance); returns the warehouse path (default
    ``tmp_path/warehouse.duckdb``; ``db`` may name a DuckLake, ``ducklake:<catalog>``, with its ``data_path``)."""
    import dagster as dg

    from pipelines import runner

    db = db or tmp_path / "warehouse.duckdb"
    runner.configure(logs, db, prices, follow_symlinks, data_path)
    runner.run_pipeline(instance=dg.DagsterInstance.ephemeral())
    return db


def query(db: Path, sql: str, params=None) -> list[tuple]:
    """Rows of a read-only query on a warehouse file."""
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql, params or {}).fetchall()


TABLES = ["stage.files", "core.usage", "core.quarantine", "core.prices",
          "core.cache_minimums", "core.usage_costs", "marts.daily_savings", "marts.prefix_families", "marts.cost_reconciliation",
          "marts.cache_alerts", "marts.whatif_routing", "marts.whatif_cache_ttl",
          "marts.ttft_by_family"]


def snapshot(db: Path | str) -> dict[str, list[tuple]]:
    """Every table's rows in a stable order, without wall-clock columns (staged_at, quarantined_at); ``db``
    is a warehouse file or a DuckLake target."""
    from pipelines.lib import warehouse

    out = {}
    with warehouse.connect(db, read_only=True) as conn:
        for table in TABLES:
            columns = [c[0] for c in conn.execute(f"describe {table}").fetchall()
                       if c[0] not in ("staged_at", "quarantined_at")]
            out[table] = conn.execute(f"select {', '.join(columns)} from {table} order by all").fetchall()
    return out


@pytest.fixture(scope="session")
def formats_warehouse(tmp_path_factory, shared) -> tuple[Path, Path]:
    """(logs, warehouse) of one pipeline run over every example in fixtures/formats plus every generation
    response of the pydantic-ai cassettes (in ``cassettes/generations.jsonl``); shared by the format and
    oracle tests so the run happens once."""
    import shutil

    from tests.sql.test_ingest_normalise import TS, cassette_generations

    tmp = tmp_path_factory.mktemp("formats")
    logs = tmp / "logs"
    shutil.copytree(REPO / "fixtures" / "formats", logs)
    write_jsonl(logs / "cassettes" / "generations.jsonl",
                [{"ts": TS, "provider": p, "model": m, "request_id": f"cassette-{i}", "response": b}
                 for i, (_, p, m, b) in enumerate(cassette_generations(shared))])
    return logs, run_pipeline(tmp, logs)


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory) -> Path:
    """The bundled demo (fixtures/demo_logs) built once by an in-process pipeline run; tests only read it."""
    tmp = tmp_path_factory.mktemp("demo")
    return run_pipeline(tmp, REPO / "fixtures" / "demo_logs")
