"""Great Expectations 1.x validation of warehouse rows, in pandas batches fetched from DuckDB.

GX cannot validate DuckDB through SQLAlchemy/duckdb_engine today (every metric fails; GX issues
#10738 and #11579, reference/anchors.md section 3), so rows are fetched from DuckDB in chunks of
``CHUNK_ROWS`` as pandas frames and each chunk is validated against a suite defined in code, in an
ephemeral GX context (nothing written to disk). Outcomes are combined over the chunks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

import duckdb

CHUNK_ROWS = 250_000


@dataclass
class Outcome:
    """One expectation over all chunks: its name, success, rows checked and unexpected rows (with examples)."""

    expectation: str
    column: str
    success: bool
    element_count: int
    unexpected_count: int
    examples: list

    def as_metadata(self) -> dict:
        return {"success": self.success, "rows": self.element_count, "unexpected": self.unexpected_count,
                "examples": [str(e) for e in self.examples[:5]]}


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

    A query with no rows yields successful outcomes with zero elements.
    """
    import great_expectations as gx

    suite = gx.ExpectationSuite(name="cachemeter_checks", expectations=list(expectations))
    totals = {i: Outcome(type(e).__name__, getattr(e, "column", "") or "", True, 0, 0, []) for i, e in enumerate(expectations)}
    reader = conn.sql(sql, params=params).to_arrow_reader(CHUNK_ROWS)
    for chunk in reader:
        frame = chunk.to_pandas()
        if frame.empty:
            continue
        result = _batch_definition().get_batch(batch_parameters={"dataframe": frame}).validate(suite)
        for i, item in enumerate(result.results):
            outcome = totals[i]
            outcome.success = outcome.success and bool(item.success)
            outcome.element_count += int(item.result.get("element_count", len(frame)))
            outcome.unexpected_count += int(item.result.get("unexpected_count", 0) or 0)
            outcome.examples += list(item.result.get("partial_unexpected_list", []) or [])[:5]
    return list(totals.values())
