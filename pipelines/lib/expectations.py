"""Great Expectations 1.x validation of warehouse rows, in batches fetched from DuckDB.

GX cannot validate DuckDB through SQLAlchemy/duckdb_engine today (every metric fails; GX issues
#10738 and #11579, reference/anchors.md section 3), so rows are fetched from DuckDB in chunks of
``CHUNK_ROWS`` and each chunk is validated, as a pandas frame in an ephemeral GX context (nothing
written to disk), against a suite described in code (``gx.ExpectColumnValuesToBeBetween(...)``: the
GX class's name and its keyword arguments). Outcomes are combined over the chunks.

GX runs in the run's side process (``lib/side_process.py``), started by the CLI as a run starts or
by the first validation, and kept for the life of this process: importing it is seconds of pure
Python, which in this process held the GIL against the run's own work and stood on the critical
path of every run that builds a day. Chunks travel to it as Arrow IPC over a socket.

These are WARN-level distribution checks; the blocking accounting invariants run in SQL over every
row (``sql/checks``). A window above ``CACHEMETER_GX_SAMPLE_ROWS`` rows (default 200,000; 0 = no
limit) is validated on a uniform reservoir sample of that many rows (DuckDB ``USING SAMPLE``, a fixed
seed), so a nightly run's validation costs the same at 5 million requests as at 200,000; the check
metadata gives both the rows checked and the rows in the window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from pipelines.lib import options, side_process

CHUNK_ROWS = 250_000
DEFAULT_SAMPLE_ROWS = int(options.BY_NAME["gx_sample_rows"].default)


@dataclass(frozen=True)
class Expect:
    """One GX expectation, described: ``kind`` names a class of ``great_expectations.expectations``,
    ``options`` its keyword arguments (``column`` among them)."""

    kind: str
    options: dict = field(default_factory=dict)

    @property
    def column(self) -> str:
        return self.options.get("column", "") or ""


class _Kinds:
    """``gx.ExpectColumnValuesToBeBetween(column=..., min_value=..., max_value=...)`` gives an ``Expect``:
    suites read as GX's own names without importing GX here."""

    def __getattr__(self, kind: str):
        if not kind.startswith("Expect"):
            raise AttributeError(kind)
        return lambda **options: Expect(kind, options)


gx = _Kinds()


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


def validate(conn: duckdb.DuckDBPyConnection, sql: str, params: dict, expectations: list) -> list[Outcome]:
    """Validate the rows of ``sql`` against ``expectations`` (``Expect``s, e.g. ``gx.ExpectColumnValuesToBeInSet(
    column="provider", value_set=[...])``), chunk by chunk, in the side process; one ``Outcome`` per expectation.

    At most ``sample_rows()`` rows are validated (a uniform sample of a larger result). A query with
    no rows yields successful outcomes with zero elements. Raises ``side_process.SideProcessError`` when
    the side process stops or refuses an expectation (an unknown class, a bad option), ``ValueError`` for a bad
    ``CACHEMETER_GX_SAMPLE_ROWS``.
    """
    specs = [(e.kind, e.options) for e in expectations]
    in_window = conn.execute(f"select count(*) from ({sql})", params).fetchall()[0][0]
    limit = sample_rows()
    totals = {i: Outcome(e.kind, e.column, True, 0, 0, [], in_window) for i, e in enumerate(expectations)}
    if limit and in_window > limit:
        sql = f"select * from ({sql}) as window_rows using sample reservoir({limit} rows) repeatable (42)"
    reader = conn.sql(sql, params=params).to_arrow_reader(CHUNK_ROWS)
    worker = None
    for chunk in reader:
        if not chunk.num_rows:
            continue
        worker = worker or side_process.running()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, chunk.schema) as writer:
            writer.write_batch(chunk)
        for i, item in enumerate(worker.ask("validate", specs, sink.getvalue().to_pybytes())):
            outcome = totals[i]
            outcome.success = outcome.success and item["success"]
            outcome.element_count += item["element_count"]
            outcome.unexpected_count += item["unexpected_count"]
            outcome.examples += item["examples"]
    return list(totals.values())
