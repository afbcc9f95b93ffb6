"""The warehouse as a FinOps FOCUS 1.2 cost and usage dataset (``cachemeter export focus``).

One row per charge: (UTC day, provider, model, tenant, app, token class, list unit price), built by
``sql/export/focus__charges.sql`` (column sources: ``docs/focus.md``). Written with PyArrow: Parquet
keeps the types (Decimal columns ``decimal128(38, 15)`` USD or quantities, Date/Time columns
``timestamp[us, UTC]``, strings; ``Tags`` is a JSON object as text); CSV writes the same columns with
date/times as ``YYYY-MM-DDTHH:mm:ssZ`` (FOCUS Date/Time Format) and decimals in plain notation.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from pipelines.lib.sql import statement

SUFFIXES = (".parquet", ".csv")
_EARLIEST, _LATEST = date(1, 1, 1), date(9999, 12, 30)


class FocusExportError(ValueError):
    """An export that cannot be written as asked; the message says what to change."""


def charges(conn: duckdb.DuckDBPyConnection, first_day: date | None = None, last_day: date | None = None) -> pa.Table:
    """The FOCUS rows of the UTC days ``first_day`` .. ``last_day`` (both included; None = no bound)
    as an Arrow table, in the column order of the SQL (FOCUS columns first, then ``x_`` columns)."""
    end = (last_day or _LATEST) + timedelta(days=1)
    return conn.sql(statement("export/focus__charges"), params={"start": first_day or _EARLIEST, "end": end}).to_arrow_table()


def unpriced_requests(conn: duckdb.DuckDBPyConnection, first_day: date | None = None,
                      last_day: date | None = None) -> int:
    """Requests (sum of request_count) of the UTC days ``first_day`` .. ``last_day`` left out of the export
    because they are unpriced (no cost to charge: docs/focus.md; the unpriced_usage alert names their models)."""
    end = (last_day or _LATEST) + timedelta(days=1)
    return conn.execute("select coalesce(sum(request_count), 0) from core.usage_costs "
                        "where not priced and day >= $start and day < $end",
                        {"start": first_day or _EARLIEST, "end": end}).fetchall()[0][0]


def check_request(out: Path, first_day: date | None, last_day: date | None) -> None:
    """Raise ``FocusExportError`` when ``out`` is neither ``.parquet`` nor ``.csv`` or the days are reversed."""
    if out.suffix.lower() not in SUFFIXES:
        raise FocusExportError(f"{out}: the file name must end in .parquet or .csv (got {out.suffix or 'no suffix'!r})")
    if first_day and last_day and first_day > last_day:
        raise FocusExportError(f"--from {first_day} is after --to {last_day}")


def write(table: pa.Table, out: Path) -> None:
    """Write ``table`` to ``out`` (``.parquet`` or ``.csv``, chosen by the suffix; the folder is created).

    Raises ``FocusExportError`` for another suffix, ``OSError`` when the file cannot be written."""
    check_request(out, None, None)
    suffix = out.suffix.lower()
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".parquet":
        pq.write_table(table, out)
        return
    # whole seconds first: strftime's %S prints a microsecond timestamp's fraction too
    columns = [pc.strftime(column.cast(pa.timestamp("s", tz="UTC")), format="%Y-%m-%dT%H:%M:%SZ")
               if pa.types.is_timestamp(column.type) else column for column in table.columns]
    pa_csv.write_csv(pa.table(columns, names=table.column_names), out)


def export(conn: duckdb.DuckDBPyConnection, out: Path, first_day: date | None = None,
           last_day: date | None = None) -> pa.Table:
    """Write the FOCUS rows of the days ``first_day`` .. ``last_day`` to ``out``; returns the rows written.

    Raises ``FocusExportError`` (bad suffix, ``first_day`` after ``last_day``) and ``OSError``."""
    check_request(out, first_day, last_day)
    table = charges(conn, first_day, last_day)
    write(table, out)
    return table
