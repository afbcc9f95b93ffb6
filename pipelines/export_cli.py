"""``cachemeter export``: the warehouse in standard formats for other tools.

Examples::

    cachemeter export focus --out focus.parquet                       # every day, FinOps FOCUS 1.2
    cachemeter export focus --out nov.csv --from 2026-11-01 --to 2026-11-30 --db warehouse/mine.duckdb
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import typer
from rich.markup import escape

from pipelines.db_option import db_option
from pipelines.lib import focus as focus_export
from pipelines.lib import warehouse
from pipelines.lib.terminal import Console

app = typer.Typer(help="Export the warehouse in standard formats.", no_args_is_help=True,
                  add_completion=False, rich_markup_mode="markdown")
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, soft_wrap=True)


@app.command()
def focus(
    out: Path = typer.Option(..., "--out", help="File to write: .parquet (typed) or .csv."),
    first: datetime = typer.Option(None, "--from", formats=["%Y-%m-%d"], help="First UTC day (YYYY-MM-DD). Default: the first."),
    last: datetime = typer.Option(None, "--to", formats=["%Y-%m-%d"], help="Last UTC day, included. Default: the last."),
    db: str = db_option(warehouse.DEFAULT_DB, help="DuckDB warehouse file (its snapshot is read)."),
) -> None:
    """Write a FinOps FOCUS 1.2 cost and usage file: one row per UTC day, provider, model, tenant, app and token class.

    BilledCost is what was billed (the source's reported amount where the log has one), ListCost the
    catalogue price; columns and their sources: docs/focus.md.

    Example: `cachemeter export focus --out focus.parquet --from 2026-11-01 --to 2026-11-30`
    """
    first_day, last_day = first and first.date(), last and last.date()
    try:
        focus_export.check_request(out, first_day, last_day)  # before opening the warehouse
        with warehouse.open_for_reading(db) as conn:
            table = focus_export.export(conn, out, first_day, last_day)
            unbuilt = warehouse.unbuilt_days_note(conn, db)
            unpriced = focus_export.unpriced_requests(conn, first_day, last_day)
    except (focus_export.FocusExportError, FileNotFoundError, warehouse.NotAWarehouseError) as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    except duckdb.Error as exc:
        err_console.print(f"[red]error:[/red] {escape(f'{db}: {warehouse.reader_error(exc, db)}')}")
        raise typer.Exit(1) from exc
    except OSError as exc:  # a file where a folder of the path should be: "File exists" named no file (a break test)
        blocking = next((parent for parent in out.parents if parent.is_file()), None)
        reason = f"{blocking} is a file, not a folder" if blocking else exc.strerror or exc
        err_console.print(f"[red]error:[/red] {escape(f'cannot write {out}: {reason}')}")
        raise typer.Exit(1) from exc
    if unbuilt:
        err_console.print(f"[yellow]warning:[/yellow] {escape(unbuilt)}", soft_wrap=True)
    if unpriced:
        err_console.print(f"[yellow]warning:[/yellow] {unpriced:,} unpriced request(s) left out (no price to charge them "
                          "at: add their models with --prices; marts.cache_alerts' unpriced_usage alert names them)",
                          soft_wrap=True)
    if not table.num_rows:  # an empty file with exit code 0 read like an export (a break test)
        span = f"{first_day or 'the first day'} .. {last_day or 'the last day'}"
        err_console.print(f"[yellow]warning:[/yellow] no priced usage in {escape(span)}: the file holds the header only",
                          soft_wrap=True)
    billed = pc.sum(table.column("BilledCost")).as_py() if table.num_rows else 0
    days = pc.unique(table.column("ChargePeriodStart")).to_pylist() if table.num_rows else []
    console.print(f"{table.num_rows:,} FOCUS rows over {len(days):,} day(s), BilledCost {billed or 0:,.6f} USD, "
                  f"written to {escape(str(out))}", soft_wrap=True)
