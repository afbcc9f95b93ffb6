"""Great Expectations 1.x validation of warehouse rows, in pandas batches fetched from DuckDB.

GX cannot validate DuckDB through SQLAlchemy/duckdb_engine today (every metric fails; GX issues
#10738 and #11579, reference/anchors.md section 3), so rows are fetched from DuckDB in chunks of
``CHUNK_ROWS`` as pandas frames and each chunk is validated against a suite defined in code, in an
ephemeral GX context (nothing written to disk). Outcomes are combined over the chunks.

These are WARN-level distribution checks; the blocking accounting invariants run in SQL over every
row (``sql/checks``). A window above ``CACHEMETER_GX_SAMPLE_ROWS`` rows (default 200,000; 0 = no
limit) is validated on a uniform reservoir sample of that many rows (DuckDB ``USING SAMPLE``, a fixed
seed), so a nightly run's validation costs the same at 5 million requests as at 200,000; the check
metadata gives both the rows checked and the rows in the window. Importing GX takes seconds of pure
Python, so ``preload`` starts it in a background thread while staging runs in DuckDB.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cache

import duckdb

from pipelines.lib import options

CHUNK_ROWS = 250_000
DEFAULT_SAMPLE_ROWS = int(options.BY_NAME["gx_sample_rows"].default)
_preload: threading.Thread | None = None


@dataclass
class Outcome:
    """One expectation over all chunks: its name, success, rows checked and unexpected rows (with examples)."""

    expectation: str
    column: str
    success: bool
    element_count: int
    unexpected_count: int
    examples: list
    rows_in_window: int = 0  # rows the query returned before sampling

    def as_metadata(self) -> dict:
        return {"success": self.success, "rows": self.element_count, "unexpected": self.unexpected_count,
                "rows_in_window": self.rows_in_window, "examples": [str(e) for e in self.examples[:5]]}


def sample_rows() -> int:
    """Rows GX validates per check at most (``CACHEMETER_GX_SAMPLE_ROWS``, default 200,000; 0 = all).

    Raises ``ValueError`` naming the variable when it is not a non-negative integer.
    """
    raw = os.environ.get(options.BY_NAME["gx_sample_rows"].env) or str(DEFAULT_SAMPLE_ROWS)
    if not raw.strip().isdigit():
        raise ValueError(f"CACHEMETER_GX_SAMPLE_ROWS must be a whole number of rows (0 = all), not {raw!r}")
    return int(raw)


def preload() -> None:
    """Import Great Expectations and build its context in a background thread (once per process)."""
    global _preload
    if _preload is None:
        _preload = threading.Thread(target=_batch_definition, name="gx-preload", daemon=True)
        _preload.start()


def _ready():
    """The batch definition, once the preload (if started) has finished: the package must not be imported
    from two threads at once (its circular imports then fail half-way, seen in a run as "partially
    initialized module 'sqlalchemy.orm.exc' has no attribute 'UnmappedClassError'")."""
    if _preload is not None:
        _preload.join()
    return _batch_definition()


def module():
    """The ``great_expectations`` package, imported after the preload (if started) has finished (``_ready``)."""
    _ready()
    import great_expectations

    return great_expectations


@cache
def _batch_definition():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("cachemeter")
    return source.add_dataframe_asset("warehouse_rows").add_batch_definition_whole_dataframe("chunk")


def validate(conn: duckdb.DuckDBPyConnection, sql: str, params: dict, expectations: list) -> list[Outcome]:
    """Validate the rows of ``sql`` against ``expectations`` (GX expectation objects), chunk by chunk.

    At most ``sample_rows()`` rows are validated (a uniform sample of a larger result). A query with
    no rows yields successful outcomes with zero elements.
    """
    batches = _ready()
    import great_expectations as gx

    suite = gx.ExpectationSuite(name="cachemeter_checks", expectations=list(expectations))
    in_window = conn.execute(f"select count(*) from ({sql})", params).fetchall()[0][0]
    limit = sample_rows()
    totals = {i: Outcome(type(e).__name__, getattr(e, "column", "") or "", True, 0, 0, [], in_window)
              for i, e in enumerate(expectations)}
    if limit and in_window > limit:
        sql = f"select * from ({sql}) as window_rows using sample reservoir({limit} rows) repeatable (42)"
    reader = conn.sql(sql, params=params).to_arrow_reader(CHUNK_ROWS)
    for chunk in reader:
        frame = chunk.to_pandas()
        if frame.empty:
            continue
        result = batches.get_batch(batch_parameters={"dataframe": frame}).validate(suite)
        for i, item in enumerate(result.results):
            outcome = totals[i]
            outcome.success = outcome.success and bool(item.success)
            outcome.element_count += int(item.result.get("element_count", len(frame)))
            outcome.unexpected_count += int(item.result.get("unexpected_count", 0) or 0)
            outcome.examples += list(item.result.get("partial_unexpected_list", []) or [])[:5]
    return list(totals.values())
