"""The warehouse as a FinOps FOCUS 1.2 cost and usage dataset (``cachemeter export focus``).

One row per charge: (UTC day, provider, model, tenant, app, token class, list unit price), built by
``sql/export/focus__charges.sql`` (column sources: ``docs/focus.md``). Parquet (written with PyArrow)
keeps the types (Decimal columns ``decimal128(38, 15)`` USD or quantities, Date/Time columns
``timestamp[us, UTC]``, strings; ``Tags`` is a JSON object as text); CSV (written by DuckDB) the same columns
with date/times as ``YYYY-MM-DDTHH:mm:ssZ`` (FOCUS Date/Time Format) and decimals in plain notation. Either file
replaces the previous one whole (a temporary file renamed over it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.lib import file_modes
from pipelines.lib.sql import statement

SUFFIXES = (".parquet", ".csv")
_EARLIEST, _LATEST = date(1, 1, 1), date(9999, 12, 30)


class FocusExportError(ValueError):
    """An export that cannot be written as asked; the message says what to change."""


def charges(conn: duckdb.DuckDBPyConnection, first_day: date | None = None, last_day: date | None = None) -> pa.Table:
    """The FOCUS rows of the UTC days ``first_day`` .. ``last_day`` (both included; None = no bound)
    as an Arrow table, in the column order of the SQL (FOCUS columns first, then ``x_`` columns)."""
    end = min(last_day or _LATEST, _LATEST) + timedelta(days=1)  # (9999-12-31 + 1 day overflowed, a break test)
    return conn.sql(statement("export/focus__charges"), params={"start": first_day or _EARLIEST, "end": end}).to_arrow_table()


def unpriced_requests(conn: duckdb.DuckDBPyConnection, first_day: date | None = None,
                      last_day: date | None = None) -> int:
    """Requests (sum of request_count) of the UTC days ``first_day`` .. ``last_day`` left out of the export
    because they are unpriced (no cost to charge: docs/focus.md; the unpriced_usage alert names their models)."""
    end = min(last_day or _LATEST, _LATEST) + timedelta(days=1)
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
    """Write ``table`` to ``out`` (``.parquet`` or ``.csv``, chosen by the suffix; the folder is created), whole or
    not at all: the file is written beside ``out`` under a temporary name, then renamed over it, so a full disk or a
    killed export leaves the previous export intact (it left a truncated file, a break test).

    Raises ``FocusExportError`` for another suffix, ``OSError`` when the file cannot be written."""
    check_request(out, None, None)
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(handle)
    try:
        _write_to(table, Path(name), out.suffix.lower())
        file_modes.as_created(name)  # mkstemp's 0600 made the export unreadable to the tools it is for
        os.replace(name, out)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def _write_to(table: pa.Table, path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pq.write_table(table, path)
        return
    # whole seconds first: strftime's %S prints a microsecond timestamp's fraction too
    columns = [pc.strftime(column.cast(pa.timestamp("s", tz="UTC")), format="%Y-%m-%dT%H:%M:%SZ")
               if pa.types.is_timestamp(column.type) else column for column in table.columns]
    # DuckDB writes the CSV: it spells a decimal in plain notation (0.000000000000000), where Arrow's writer spells
    # zero and amounts below 10^-6 in scientific notation (0E-15, a break test), which FOCUS's decimal format forbids
    # (written under a temporary folder's plain name, then copied: the target's name may not be UTF-8, which DuckDB
    # cannot take)
    with duckdb.connect() as conn, tempfile.TemporaryDirectory(prefix="cachemeter-export-") as folder:
        conn.register("charges", pa.table(columns, names=table.column_names))
        written = Path(folder) / "charges.csv"
        conn.execute(f"copy charges to '{str(written).replace(chr(39), chr(39) * 2)}' (format csv, header)")
        shutil.copyfile(written, path)


def export(conn: duckdb.DuckDBPyConnection, out: Path, first_day: date | None = None,
           last_day: date | None = None) -> pa.Table:
    """Write the FOCUS rows of the days ``first_day`` .. ``last_day`` to ``out``; returns the rows written.

    Raises ``FocusExportError`` (bad suffix, ``first_day`` after ``last_day``) and ``OSError``."""
    check_request(out, first_day, last_day)
    table = charges(conn, first_day, last_day)
    write(table, out)
    return table
