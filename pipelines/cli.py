"""The ``cachemeter`` command line: ``run`` the pipeline, query the warehouse with ``sql``.

Examples::

    cachemeter run                                   # bundled demo logs -> warehouse/cachemeter.duckdb
    cachemeter run --logs ~/llm-logs --prices rates.csv
    cachemeter sql "select day, app, token_hit_rate, savings_usd from marts.daily_savings order by day desc limit 20"
    cachemeter report --days 14            # self-contained HTML with charts
    cachemeter doctor                      # what is installed, configured and what to fix
    cachemeter whatif routing --logs traces/ --cards 4 --policy all   # what routing by prefix would change
    cachemeter export focus --out focus.parquet   # FinOps FOCUS 1.2 cost and usage file
    cachemeter fetch usage-api --logs ~/llm-logs   # yesterday's usage from the OpenAI / Anthropic admin APIs
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import errno
import json
import logging
import math
import os
import shlex
import shutil
import sys
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from pathlib import Path

import duckdb
import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pipelines.db_option import db_option
from pipelines.lib import collector, lake, options, progress, warehouse
from pipelines.lib.terminal import Console, one_line, visible

app = typer.Typer(help="Cost metering and billing analytics for LLM prompt caching.", no_args_is_help=True,
                  add_completion=False, rich_markup_mode="markdown")
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, soft_wrap=True)  # one message per line, however narrow the terminal


TABLE_ROWS = 10_000  # rows `cachemeter sql --format table` shows at most
SQL_TIMEOUT_SECONDS = float(options.BY_NAME["sql_timeout"].default)  # an ad-hoc query's default time limit (--timeout, CACHEMETER_SQL_TIMEOUT)


# set by ``run``: its process holds Dagster, Great Expectations, pandas and Altair, whose teardown
# ``main`` skips (``_exit_without_teardown``)
_imports_heavy_modules = False


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def run(
    logs: str = typer.Option(None, "--logs", envvar="CACHEMETER_LOGS", show_default=False,
                             help="Folder of usage logs (searched recursively), or a bucket prefix: s3://bucket/prefix, "
                             "gs://..., abfs://... (credentials from the provider's standard chain). Default: the bundled demo logs."),
    db: str = db_option(warehouse.DEFAULT_DB,
                        help="DuckDB warehouse file (created if missing), or a DuckLake "
                        "catalog: `ducklake:<file>.ducklake`, `ducklake:sqlite:<file>` or `ducklake:postgres:<conninfo>`."),
    data_path: str = typer.Option(None, "--data-path", envvar="CACHEMETER_DATA_PATH", show_default=False,
                                  help="Folder or s3://bucket/prefix of a DuckLake's Parquet files (needed when the "
                                  "catalog is created; default `<catalog file>.files`)."),
    prices: Path = typer.Option(None, "--prices", envvar="CACHEMETER_PRICES", show_default=False, help="Price override CSV with the header provider, model, effective_from, "
                                "input_per_mtok, cache_read_per_mtok, cache_write_5m_per_mtok, cache_write_1h_per_mtok, "
                                "output_per_mtok (USD per million tokens), optionally price_variant (README, \"Price overrides\")."),
    follow_symlinks: bool = typer.Option(False, "--follow-symlinks", envvar="CACHEMETER_FOLLOW_SYMLINKS",
                                         help="Follow symlinks that leave the logs folder."),
    all_days: bool = typer.Option(False, "--all-days", help="Rebuild every staged UTC day, not only the days whose "
                                  "logs or prices changed (for example after changing alert thresholds)."),
    wait: float = typer.Option(0, "--wait", min=0, help="Seconds to wait for another run holding the warehouse "
                               "before giving up, naming the holder (with 0, a holder is still waited out for 2 s: a "
                               "reader that opened it for a moment)."),
    parallel: int = typer.Option(1, "--parallel", envvar="CACHEMETER_PARALLEL", min=1,
                                 help="Processes that build the days at once (a DuckLake with a PostgreSQL catalog only; "
                                 "elsewhere days are built one after another)."),
) -> None:
    """Stage new or changed logs, price them and rebuild the UTC days they touch; print the daily savings.

    Days whose logs did not change are not rebuilt, unless their baselines read a day that did (a
    changed price book reprices every day).

    Example: `cachemeter run --logs ./logs --db warehouse/cachemeter.duckdb`
    """
    global _imports_heavy_modules
    from pipelines.lib import side_process

    # the side process imports the report's libraries and Great Expectations (seconds) on the other core while
    # this one imports Dagster and stages; the days' checks validate there and the report is rendered there
    try:  # the variables first: the definitions read some as they are imported (CACHEMETER_PARTITIONS_START)
        options.check_environment()
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from exc
    side_process.preload()
    with collector.paused():  # Dagster's modules, loaded once for the process's life
        from pipelines import runner

    _imports_heavy_modules = True
    logging.getLogger("dagster").setLevel(logging.ERROR)
    os.environ["CACHEMETER_PARALLEL"] = str(parallel)  # read by the runner and its worker processes
    from pipelines.defs.settings import CachemeterSettings

    try:  # a bad setting, path or settings file: one line naming it, before Dagster builds the definitions from it
        runner.configure(logs, db, prices, follow_symlinks, data_path)
        CachemeterSettings.from_env()
        options.check_environment()
        from pipelines import parallel_days

        if parallel > 1 and parallel_days.workers_for(os.environ["CACHEMETER_DB"]) == 1:  # was ignored without a word
            err_console.print(f"[yellow]note:[/yellow] --parallel {parallel} is ignored: only a DuckLake with a "
                              "PostgreSQL catalog takes writers in several processes; days are built one after another",
                              soft_wrap=True)
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from exc
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[label]}"), TimeElapsedColumn(), console=err_console,
                  transient=True) as bar:
        progress.set_listener(progress_listener(bar, bar.add_task("Reading logs", total=None, label="")))
        undelivered = None
        try:
            started = datetime.now(timezone.utc)
            result = runner.run_pipeline(all_days=all_days, wait_seconds=wait)
        except runner.NoticesNotDeliveredError as exc:
            if exc.result is None:
                err_console.print(f"[red]error:[/red] {escape(str(exc))}")
                raise typer.Exit(1) from exc
            result, undelivered = exc.result, exc  # built and published: the summary first, then the error
        except (runner.PipelineError, warehouse.WarehouseBusyError, lake.LakeError) as exc:
            err_console.print(f"[red]error:[/red] {escape(lake.redacted(lake.with_files_hint(str(exc))))}")
            raise typer.Exit(1) from exc
        except KeyboardInterrupt as exc:  # between two Dagster runs, where neither handles it (it printed nothing, a break test)
            from pipelines.defs.nightly.sensors import INTERRUPTED_MESSAGE

            err_console.print(f"[red]error:[/red] {INTERRUPTED_MESSAGE}")
            raise typer.Exit(1) from exc
        except (duckdb.Error, OSError) as exc:  # outside the steps: e.g. a warehouse in a read-only folder
            first = (str(exc).strip().splitlines() or [repr(exc)])[0]
            err_console.print(f"[red]error:[/red] {escape(lake.redacted(lake.with_files_hint(first)))}")
            raise typer.Exit(1) from exc
        finally:
            progress.set_listener(None)
    _print_summary(db, result, started)
    _print_given_up_notices(db, started)
    if undelivered is not None:  # the night the webhook failed is the night the console must show the incidents
        err_console.print(f"[red]error:[/red] {escape(str(undelivered))}")
        raise typer.Exit(1)


def _print_given_up_notices(db: str, since: datetime) -> None:
    """A warning when this run gave up on incident notices (``dead_letter``: the webhook refused each its
    maximum number of times). The attempts are recorded after the snapshot is published, so they are read from
    the warehouse itself, which the run has released (only with a webhook configured: no extra open otherwise);
    nothing is printed if it cannot be read."""
    from pipelines.defs.settings import CachemeterSettings

    if not os.environ.get(CachemeterSettings.from_env().webhook_url_env):
        return
    try:
        with warehouse.connect(db, read_only=True) as conn:
            given_up = conn.execute("select count(*) from marts.alert_deliveries "
                                    "where status = 'dead_letter' and attempted_at >= $since", {"since": since}).fetchall()[0][0]
    except Exception:  # a lake, a run that started meanwhile: the warning is a courtesy, never a failure
        return
    if given_up:
        err_console.print(f"[yellow]warning:[/yellow] {given_up} incident notice(s) given up after the webhook refused "
                          "each its maximum number of attempts (webhook.max_attempts): see marts.alert_deliveries",
                          soft_wrap=True)


# the longest report: 100 years of UTC days (counting back further than the calendar goes overflowed the date)
REPORT_MAX_DAYS = options.UNIT_BOUNDS["days"][1]  # (100 years)
STEPS = {"ingest": "Reading logs", "build": "Building UTC days", "publish": "Publishing"}


def progress_listener(bar: Progress, task) -> progress.Listener:
    """The run's listener for ``lib/progress``: counted reports move ``task``'s bar (description from ``STEPS``,
    label: the file or days); ``doing`` reports add what the step does now after that label ("2026-10-01 ..
    2026-10-01 · building core.usage_costs"), until the next counted report; warnings print one line above the bar."""
    shown = {"label": "", "doing": ""}

    def listener(step: str, done: int, total: int, label: str) -> None:
        if step == "warning":
            bar.console.print(f"[yellow]warning:[/yellow] {escape(label)}", soft_wrap=True)
            return
        if step == "doing":
            shown["doing"] = label
        else:
            shown["label"], shown["doing"] = label, ""
            bar.update(task, description=STEPS.get(step, step), completed=done, total=total)
        bar.update(task, label=escape(one_line(" · ".join(part for part in (shown["label"], shown["doing"]) if part))))
    return listener


@app.command()
def sql(
    query: str = typer.Argument(..., help="A SELECT (or other read-only) statement in DuckDB SQL."),
    db: str = db_option(warehouse.DEFAULT_DB, help="DuckDB warehouse file or DuckLake target (`ducklake:<catalog>`)."),
    output: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table, csv or json."),
    live: bool = typer.Option(False, "--live", help="Read the warehouse file itself, not its snapshot "
                              "(fails while a run holds the file)."),
    memory_limit: str = typer.Option(None, "--memory-limit", show_default=False,
                                     help="DuckDB memory for the query, e.g. 4GB. Default: $CACHEMETER_MEMORY_LIMIT, else 1GB."),
    timeout: float = typer.Option(SQL_TIMEOUT_SECONDS, "--timeout", envvar="CACHEMETER_SQL_TIMEOUT", min=0,
                                  help="Seconds the query may run (0 = no limit)."),
    as_of: str = typer.Option(None, "--as-of", show_default=False,
                              help="DuckLake only: answer from an earlier snapshot, by id (see "
                              "`select * from ducklake_snapshots('lake')`) or time ('2026-11-20 08:00:00+00')."),
) -> None:
    """Answer an ad-hoc query on a read-only connection, from the snapshot the last run published.

    The snapshot (`<warehouse>.snapshot.duckdb`) answers even while a run writes the warehouse. A
    query gets at most `--memory-limit` of memory and `--timeout` seconds; past either it stops
    with a one-line error.

    On a DuckLake (`--db ducklake:...`) the query reads the snapshot committed last, or the one
    `--as-of` names: what the numbers said before a late file changed a day.

    Example: `cachemeter sql "select day, sum(savings_usd) from marts.daily_savings group by all order by day"`
    """
    import duckdb

    source = db if live else warehouse.for_readers(db)
    try:  # (-5GB ran, "abc" said DuckDB's "Memory must have a number" naming no option: a break test)
        limit = options.BY_NAME["memory_limit"].parse(memory_limit) if memory_limit else warehouse.configured_memory_limit()
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc).replace('CACHEMETER_MEMORY_LIMIT', '--memory-limit') if memory_limit else str(exc))}")
        raise typer.Exit(2) from exc
    try:
        conn = warehouse.connect(source, read_only=True, memory_limit=limit, as_of=as_of)
        # one statement: an empty query (or a comment alone) ended in "AttributeError", and of several only the last
        # answer was printed, without a word (a break test)
        given = len(conn.extract_statements(query))
        if given != 1:
            raise ValueError("the query holds no statement: give one SELECT" if not given else
                             f"the query holds {given} statements: give one (each answers on its own `cachemeter sql`)")
        with warehouse.time_limit(conn, timeout):
            cursor = _months_kept(conn, query, conn.execute(query))
            columns = [d[0] for d in cursor.description or []]
            # a table is for reading: its first TABLE_ROWS rows (2M rows took minutes of rendering, a break test)
            rows = cursor.fetchmany(TABLE_ROWS + 1) if output is OutputFormat.table else cursor.fetchall()
        try:  # days staged but not built: report and export said so, sql answered from them without a word (a break test)
            unbuilt = warehouse.unbuilt_days_note(conn, db)
        except duckdb.Error:  # a DuckDB file without cachemeter's tables: nothing to say
            unbuilt = None
    except duckdb.InterruptException as exc:
        err_console.print(f"[red]error:[/red] the query ran longer than {timeout:g} s and was stopped "
                          "(raise --timeout or CACHEMETER_SQL_TIMEOUT; 0 = no limit)", soft_wrap=True)
        raise typer.Exit(1) from exc
    except duckdb.OutOfMemoryException as exc:
        err_console.print(f"[red]error:[/red] the query needs more than the {limit} memory limit and was stopped "
                          "(raise --memory-limit or CACHEMETER_MEMORY_LIMIT)", soft_wrap=True)
        raise typer.Exit(1) from exc
    except (FileNotFoundError, ValueError) as exc:  # ValueError: --as-of on a DuckDB file; a bad --as-of
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    except duckdb.IOException as exc:
        damaged_snapshot = not live and not lake.is_lake(db) and Path(source) != Path(db) and "lock" not in str(exc).lower()
        said = (f"{str(exc).strip().splitlines()[0]} (the snapshot {source} is damaged: the next successful "
                "`cachemeter run` publishes it again; --live reads the warehouse itself meanwhile)" if damaged_snapshot
                else warehouse.reader_error(exc, db, live))
        err_console.print(f"[red]error:[/red] {escape(said)}")
        raise typer.Exit(1) from exc
    except duckdb.Error as exc:
        said = _one_line(str(exc))
        if as_of and isinstance(exc, duckdb.CatalogException):  # "schema marts does not exist" at --as-of 0 (a break test)
            said = (f"--as-of {as_of}: {said.strip().splitlines()[0]} That snapshot may be older than the run that "
                    "built the table (a first run commits the lake over many snapshots; `select snapshot_id, "
                    "snapshot_time, changes from ducklake_snapshots('lake')` lists them)")
        err_console.print(f"[red]error:[/red] {escape(said)}", soft_wrap=True)
        raise typer.Exit(1) from exc
    if output is OutputFormat.csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows([[_plain(v) if isinstance(v, (Decimal, list, dict, tuple, bytes, timedelta)) else v for v in row]
                          for row in rows])
    elif output is OutputFormat.json:
        # DECIMALs as strings (exact, as JSON numbers would not be), dates and times as their text; a name given twice
        # is kept apart (a dict kept only the last column of that name), a non-finite number is a string (NaN and
        # Infinity are not JSON)
        keys = _unique(columns)
        print(json.dumps([dict(zip(keys, (_json_value(v) for v in row))) for row in rows], default=_plain, indent=1,
                         allow_nan=False))
    else:
        table = Table(*[escape(visible(c)) for c in columns])
        for row in rows[:TABLE_ROWS]:
            table.add_row(*[_cell(v) for v in row])
        if len(rows) > TABLE_ROWS:
            err_console.print(f"[yellow]note:[/yellow] the first {TABLE_ROWS:,} rows are shown; --format csv or json "
                              "gives them all")
        if sys.stdout.isatty():
            console.print(table)
        else:  # in pieces smaller than the output's buffer: one large write() that the disk took only part of lost its
            # error in Python's buffered writer (a full disk left a truncated file and exit code 0, a break test)
            # at its natural width: at the console's 140 columns cells were cut with "…" (a break test)
            wide = Console(width=100_000, color_system=None)
            with wide.capture() as captured:
                wide.print(table)
            text = captured.get()
            for start in range(0, len(text), 4096):
                sys.stdout.write(text[start:start + 4096])
    sys.stdout.flush()  # here, not at exit: a full disk is reported
    if unbuilt:
        err_console.print(f"[yellow]warning:[/yellow] {escape(unbuilt)}", soft_wrap=True)


@app.command()
def report(
    db: str = db_option(warehouse.DEFAULT_DB, help="DuckDB warehouse file (its snapshot is read)."),
    days: int = typer.Option(options.BY_NAME["report_days"].default, "--days", min=1, max=REPORT_MAX_DAYS,
                             envvar="CACHEMETER_REPORT_DAYS",
                             help="How many UTC days of data to show (counting back from the last)."),
    out: Path = typer.Option(None, "--out", help="Where to write the HTML file. Default: beside the warehouse, "
                             "report.html (`<name>.report.html` for a warehouse not named cachemeter.duckdb)."),
) -> None:
    """Write the daily cache report: one self-contained HTML file (charts and tables; opens offline).

    Example: `cachemeter report --days 14 --out report.html` then open report.html in a browser.
    """
    from pipelines.lib import report as cache_report

    out = out or warehouse.report_path(db)  # where `cachemeter run` writes it too
    if out.suffix.lower() not in (".html", ".htm"):  # `--out <the warehouse>` replaced it with the page (a break test)
        err_console.print(f"[red]error:[/red] --out {escape(str(out))} does not end in .html: the report is an HTML "
                          "page, and this refuses to write it over any other file (a warehouse or its snapshot)")
        raise typer.Exit(2)
    if out.is_dir():
        err_console.print(f"[red]error:[/red] {escape(str(out))} is a folder: --out takes the HTML file to write")
        raise typer.Exit(1)
    try:
        with warehouse.open_for_reading(db) as conn:
            try:
                written = cache_report.write(conn, out, days)
            except OSError as exc:  # named by --out, not by the temporary file beside it (a break test)
                err_console.print(f"[red]error:[/red] cannot write {escape(str(out))}: {escape(exc.strerror or str(exc))}")
                raise typer.Exit(1) from exc
            unbuilt = warehouse.unbuilt_days_note(conn, db)
    except (FileNotFoundError, warehouse.NotAWarehouseError, ValueError) as exc:  # ValueError: a --db refused
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    except duckdb.IOException as exc:  # a lock (only the first run's, before it publishes a snapshot), a lake's files
        err_console.print(f"[red]error:[/red] {escape(warehouse.reader_error(exc, db))}")
        raise typer.Exit(1) from exc
    except OSError as exc:
        err_console.print(f"[red]error:[/red] cannot write {escape(str(out))}: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(1) from exc
    if unbuilt:
        err_console.print(f"[yellow]warning:[/yellow] {escape(unbuilt)}", soft_wrap=True)
    console.print(f"Report written to {escape(str(written))} ({written.stat().st_size / 1e6:.1f} MB, no network needed to open it)")


@app.command()
def doctor(db: str = db_option(warehouse.DEFAULT_DB, help="DuckDB warehouse file to check.")) -> None:
    """Check the install, the price catalogue, the warehouse, DAGSTER_HOME and the webhook; say what to fix.

    Example: `cachemeter doctor --db warehouse/cachemeter.duckdb`
    """
    from pipelines.lib import doctor as checks

    results = checks.run_checks(db)
    table = Table("check", "status", "detail / fix", title="cachemeter doctor")
    for result in results:
        colour = {"ok": "green", "warn": "yellow", "fail": "red"}[result.status]
        table.add_row(result.name, f"[{colour}]{result.status}[/{colour}]", escape(visible(result.detail)))
    console.print(table)
    if any(r.status == "fail" for r in results):
        raise typer.Exit(1)


def _register_whatif() -> None:
    from pipelines import whatif_cli

    app.add_typer(whatif_cli.app, name="whatif", help="What-if analysis: routing by prefix, KV-cache size, time to "
                  "first token (`cachemeter whatif routing --help`, `cachemeter whatif kv --help`, "
                  "`cachemeter whatif ttft --help`).")


_register_whatif()


def _register_export() -> None:
    from pipelines import export_cli

    app.add_typer(export_cli.app, name="export", help="Export the warehouse: FinOps FOCUS 1.2 "
                  "(`cachemeter export focus --help`).")


_register_export()
def _register_fetch() -> None:
    from pipelines import fetch_cli

    app.add_typer(fetch_cli.app, name="fetch", help="Fetch usage from provider APIs into the logs folder "
                  "(`cachemeter fetch usage-api --help`).")


_register_fetch()


def _cell(value) -> str:
    """A value as a table cell shows it: its text, not rich markup ("[/b]" in a value is printed, not parsed), its
    control characters as escapes (``terminal.visible``)."""
    return "" if value is None else escape(visible(_plain(value)))


def _plain(value) -> str:
    """A value's text; a DECIMAL in positional notation with all its digits (``str`` gives ``0E-15`` for a zero
    DECIMAL(38, 15), and ``1E+1`` for some values: exact, but not what a spreadsheet or a reader expects), also
    inside a list or struct (``[1.50, 0.000000000000000]``, not ``[Decimal('1.50'), ...]``)."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join("NULL" if v is None else _plain(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {'NULL' if v is None else _plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (bytes, bytearray)):  # a BLOB as DuckDB prints it (\x00ab), not Python's b'\x00ab'
        return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in value)
    if isinstance(value, timedelta):
        return _interval(value)
    return str(value)


def _interval(value: timedelta) -> str:
    """An INTERVAL as DuckDB writes it (``3 days``, ``1 day 02:00:03.5``, ``-01:30:00``), not Python's ``3 days,
    0:00:00`` or ``-1 day, 22:30:00``. DuckDB's Python client hands a month over as 30 days: a column of INTERVALs is
    printed as DuckDB's own text (``_months_kept``), and only an interval inside a list or struct prints its months as
    days."""
    sign, value = ("-", -value) if value < timedelta(0) else ("", value)
    days, seconds = value.days, value.seconds
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if value.microseconds:
        clock += f".{value.microseconds:06d}".rstrip("0")
    if not days:
        return sign + clock
    said = f"{sign}{days} day{'s' if days != 1 else ''}"
    return said if not seconds and not value.microseconds else f"{said} {sign}{clock}"


def _one_line(error: str) -> str:
    """DuckDB's error as one line: its lines joined, without the query excerpt and caret under it (``LINE 1: ...``,
    ``^``). ``select * from nope`` printed four lines, the README's promise is one (a new user's check)."""
    lines = [line.strip() for line in error.strip().splitlines()]
    return " ".join(line for line in lines if line and not line.startswith("LINE ") and set(line) != {"^"})


def _months_kept(conn: duckdb.DuckDBPyConnection, query: str, cursor: duckdb.DuckDBPyConnection):
    """``cursor`` (the answer to ``query``), or, when a column of it is an INTERVAL, the same answer with those columns
    as DuckDB's own text (``1 month``, ``1 year 2 months``): DuckDB's Python client hands an interval over as a
    ``timedelta``, a month as 30 days, so ``interval 14 month`` printed as ``420 days`` (``_interval`` still writes an
    interval inside a list or struct). A statement that cannot be read as a subquery keeps its first answer."""
    types = [str(d[1]) for d in cursor.description or []]
    if "INTERVAL" not in types:
        return cursor
    picks = ", ".join(f"#{i}::varchar as {_quoted(d[0])}" if kind == "INTERVAL" else f"#{i} as {_quoted(d[0])}"
                      for i, (d, kind) in enumerate(zip(cursor.description, types), start=1))
    try:  # (a relation: the query's own text, its trailing semicolon and comments too, is not pasted into another)
        answer = conn.sql(query)
        return answer.project(picks) if answer is not None else conn.execute(query)
    except duckdb.Error:
        return conn.execute(query)


def _quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _json_value(value):
    """A value for JSON: a non-finite float as its text ("NaN", "Infinity", "-Infinity"); lists and structs likewise
    inside; anything else as it is (``_plain`` turns the rest to text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _unique(columns: list[str]) -> list[str]:
    """Column names made unique for JSON keys: a repeated name gets ``_2``, ``_3`` (``a, a`` -> ``a, a_2``)."""
    seen: dict[str, int] = {}
    names = []
    for name in columns:
        seen[name] = seen.get(name, 0) + 1
        candidate = name if seen[name] == 1 else f"{name}_{seen[name]}"
        while candidate in columns and seen[name] > 1:
            seen[name] += 1
            candidate = f"{name}_{seen[name]}"
        names.append(candidate)
    return names


def _usd(value: Decimal | None) -> str:
    """USD for display: cents, four decimals below one cent (stored values stay exact)."""
    if value is None:
        return "-"
    return f"${value:,.4f}" if 0 < abs(value) < Decimal("0.01") else f"${value:,.2f}"


def _invoked_as() -> str:
    """How the user started this command (``.venv/bin/cachemeter`` when the venv is not activated)."""
    argv0 = Path(sys.argv[0])
    if argv0.name != "cachemeter" or shutil.which("cachemeter") == str(argv0.resolve()):
        return "cachemeter"
    try:
        return str(argv0.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(argv0)


# what the run's last line suggests next: few enough columns to read in a terminal (all 19 columns are cut to a few
# characters each at 80-120 columns), rounded for reading (the table keeps every digit), largest savings first
TRY_QUERY = ("select day, app, round(token_hit_rate, 3) as token_hit_rate, round(savings_usd, 2) as savings_usd "
             "from marts.daily_savings order by day desc, savings_usd desc limit 20")


# the run's summary is about this run: the files it read and the days it rebuilt (the most recent ones, at most this
# many), not the whole history (a nightly run on 10,000 staged files printed all of them, 3.7 s of its 8.1 s)
SUMMARY_FILES = 20
SUMMARY_DAYS = 31
SUMMARY_QUIET_DAYS = 7  # days shown when the run rebuilt none


def _print_summary(db: str, result, started: datetime) -> None:
    """The run's summary: the files staged by this run (``stage.files.staged_at`` at or after ``started``; at most
    ``SUMMARY_FILES``, and the counts of every file), its quarantined records, the days it rebuilt (the latest
    ``SUMMARY_DAYS``; the latest ``SUMMARY_QUIET_DAYS`` when it rebuilt none) with the total of every day, and the
    open incidents with those resolved on the days shown. What is left out is counted and named by a query."""
    with warehouse.connect(warehouse.for_readers(db), read_only=True) as conn:
        params = {"started": started}
        files = conn.execute(
            "select source_file, rows_in, rows_accepted, rows_quarantined from stage.files where staged_at >= $started "
            "order by source_file", params).fetchall()
        every_file = conn.execute("select count(*), coalesce(sum(rows_in), 0), coalesce(sum(rows_accepted), 0), "
                                  "coalesce(sum(rows_quarantined), 0) from stage.files").fetchone()
        days = conn.execute(
            "select day, coalesce(sum(requests), 0), sum(prompt_tokens), sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0), "
            "sum(cost_usd), sum(no_cache_cost_usd), sum(savings_usd), sum(unpriced_requests) "
            "from marts.daily_savings group by day order by day").fetchall()
        rejected = conn.execute("select source_file, source_line, reason, count(*) over () from core.quarantine "
                                "where source_file in (select source_file from stage.files where staged_at >= $started) "
                                "order by source_file, source_line limit 12", params).fetchall()
        rebuilt = [d for d in days if result.rebuilt(d[0])]
        shown_days = rebuilt[-SUMMARY_DAYS:] if result.first_day is not None else days[-SUMMARY_QUIET_DAYS:]
        since = shown_days[0][0] if shown_days else None
        alerts = conn.execute("select status, severity, message from marts.cache_incidents "
                              "where status = 'open' or resolved_day >= $since "
                              "order by status = 'open' desc, opened_day desc, severity", {"since": since}).fetchall()
        earlier_resolved = conn.execute("select count(*) from marts.cache_incidents where status <> 'open' "
                                        "and not coalesce(resolved_day >= $since, false)", {"since": since}).fetchone()[0]

    command, shown_db = _invoked_as(), shlex.quote(lake.redacted(str(db)))
    count, rows_in, accepted, quarantined = every_file
    if files:
        table = Table("file", "rows in", "accepted", "quarantined",
                      title="Files read (rows in = accepted + quarantined)")
        for name, file_rows_in, file_accepted, file_quarantined in files[:SUMMARY_FILES]:
            table.add_row(escape(visible(name)), f"{file_rows_in:,}", f"{file_accepted:,}",
                          f"[red]{file_quarantined:,}[/red]" if file_quarantined else "0")
        if len(files) > SUMMARY_FILES:
            left = files[SUMMARY_FILES:]
            table.add_row(f"... and {len(left):,} more", f"{sum(f[1] for f in left):,}", f"{sum(f[2] for f in left):,}",
                          f"{sum(f[3] for f in left):,}", style="dim")
        console.print(table)
    else:
        console.print("No new or changed log files.")
    console.print(f"All {count:,} staged file(s): {rows_in:,} rows in = {accepted:,} accepted + {quarantined:,} "
                  f"quarantined (each: {escape(command)} sql \"select * from stage.files order by staged_at desc\" "
                  f"--db {escape(shown_db)})", soft_wrap=True)
    if rejected:
        table = Table("file", "line", "why it was quarantined", title="Quarantined records (nothing is lost: see core.quarantine)")
        for name, line, reason, _ in rejected:
            shown_reason = reason if len(reason) <= 110 else reason[:107] + "..."
            table.add_row(escape(visible(name)), str(line), escape(visible(shown_reason)))
        console.print(table)
        if rejected[0][3] > len(rejected):
            console.print(f"... and {rejected[0][3] - len(rejected):,} more: {command} sql "
                          f"\"select source_file, source_line, reason from core.quarantine order by all\" --db {escape(str(db))}", soft_wrap=True)

    table = Table("day (UTC)", "requests", "prompt tokens", "token hit rate", "cost", "no-cache cost", "savings",
                  "unpriced", title="Daily savings (USD)" + (" of the days this run rebuilt" if rebuilt and
                                                             len(shown_days) < len(days) else ""))
    if len(shown_days) < len(rebuilt):
        table.add_row(f"... {len(rebuilt) - len(shown_days):,} earlier", "", "", "", "", "", "", "", style="dim")
    for day, requests, prompt, hit_rate, cost, no_cache, savings, unpriced in shown_days:
        table.add_row(str(day), f"{requests:,}", f"{prompt:,}", f"{(hit_rate or 0):.1%}", _usd(cost), _usd(no_cache),
                      _usd(savings), f"[yellow]{unpriced:,}[/yellow]" if unpriced else "0")
    if days:
        total = [sum((d[i] for d in days), Decimal(0)) for i in (4, 5, 6)]
        label = "total" if len(shown_days) == len(days) else f"all {len(days):,} days"
        table.add_row(label, f"{sum(d[1] for d in days):,}", f"{sum(d[2] for d in days):,}", "",
                      *[_usd(t) for t in total], f"{sum(d[7] for d in days):,}", style="bold")
    console.print(table)
    if alerts or earlier_resolved:
        open_count = sum(status == "open" for status, _, _ in alerts)
        console.print(f"[bold]{open_count} open incident(s), {len(alerts) - open_count + earlier_resolved} resolved"
                      f"{f' ({earlier_resolved} before {since}: marts.cache_incidents)' if earlier_resolved else ''}"
                      f"{':' if alerts else ''}[/bold]")
        for status, severity, message in alerts:
            colour = "dim" if status == "resolved" else "red" if severity == "critical" else "yellow"
            console.print(f"  [{colour}]{status} {severity}[/{colour}]: {escape(one_line(message))}", soft_wrap=True)
    if result.first_day is None and days:
        console.print("[dim]No new or changed logs or prices since the last run: no day was rebuilt "
                      "(--all-days rebuilds every day).[/dim]")
    elif result.first_day is None:
        where = "reasons above" if rejected else "reasons in core.quarantine"
        console.print(f"[yellow]No usage rows were accepted: the {quarantined:,} record(s) staged so far were all "
                      f"quarantined ({where}).[/yellow]" if quarantined else "[yellow]No log records were found.[/yellow]")
    # --db quoted for the shell: a path with a space or a glob character broke the command when pasted (a break test)
    shown = lake.redacted(str(db))  # a password in a PostgreSQL conninfo is not printed
    console.print(escape(f"Warehouse: {shown}   report: {warehouse.report_path(db)}   try: {command} sql "
                         f"\"{TRY_QUERY}\" --db {shlex.quote(shown)}"), soft_wrap=True)


# what the system answers a write or open with that no code of ours can mend: a full disk or quota, an I/O error, a
# read-only file system, a refused permission (each ended in "an unexpected error ... please report it", a break test)
_SYSTEM_REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EACCES, errno.EPERM,
                              errno.EFBIG})


def main() -> None:
    """Console-script entry point: runs the command; after ``run``, exits without the interpreter's teardown."""
    collector.own_process()
    options.unset_blank_variables(os.environ)  # before typer reads --db, --logs, --days ... from them
    try:
        try:
            app()
        except Exception as exc:  # the last resort: each command reports what it expects in one line already
            if _debugging():
                raise
            first = (str(exc).strip().splitlines() or [""])[0]
            if type(exc).__name__ in ("BinderException", "CatalogException") and "duckdb" in type(exc).__module__:
                # a DuckDB file with cachemeter's table names but other columns, or a warehouse of a newer release
                err_console.print(f"[red]error:[/red] the warehouse lacks what this command reads ({escape(first)}): "
                                  "give --db a warehouse `cachemeter run` built (a run brings an older one up to date)",
                                  soft_wrap=True)
                raise SystemExit(1) from exc
            if isinstance(exc, (lake.LakeError, warehouse.TargetError)):  # a --db refused where a command did not
                # expect it (`report --db ducklake:` and `--db /dev/null` said "an unexpected error", a break test)
                err_console.print(f"[red]error:[/red] {escape(lake.redacted(first))}", soft_wrap=True)
                raise SystemExit(2) from exc
            if isinstance(exc, OSError) and exc.errno in _SYSTEM_REFUSALS:  # the machine's answer, not a defect
                where = f" ({exc.filename})" if exc.filename else " (writing the output)"
                err_console.print(f"[red]error:[/red] {escape(exc.strerror or first)}{escape(where)}", soft_wrap=True)
                raise SystemExit(1) from exc
            err_console.print(f"[red]error:[/red] {escape(f'{type(exc).__name__}: {first}' if first else type(exc).__name__)}",
                              soft_wrap=True)
            err_console.print("[dim]an unexpected error: set CACHEMETER_DEBUG=1 to see where it came from, and please "
                              "report it[/dim]", soft_wrap=True)
            raise SystemExit(1) from exc
    except SystemExit as done:  # typer ends every command so, with its exit code
        if not _imports_heavy_modules:
            raise
        _exit_without_teardown(done.code)


def _debugging() -> bool:
    """``CACHEMETER_DEBUG`` asks for tracebacks: 1/true/yes do, 0/false/no and unset do not (``0`` did, as any
    value did); another value does, as the user set it to see one."""
    from pipelines.lib import options

    try:
        return bool(options.env_value("debug"))
    except ValueError:
        return True


def _exit_without_teardown(code: int | str | None) -> None:
    """Exit with ``code`` as ``SystemExit(code)`` would, but skip freeing every module and object one by one.

    After a run that freeing costs 1-1.5 CPU s, and several seconds wall on a busy machine, once the work
    is done (bench/one_line.py; the modules of Dagster, Great Expectations, pandas, Altair, SQLAlchemy).
    Nothing of cachemeter needs it: the warehouse connection is closed by then and Dagster's storage has
    committed every event. What an orderly exit does besides still happens: the exit handlers run
    (``atexit``: logging flushed and closed, temporary folders removed), then the standard streams are flushed.
    """
    status = 0 if code is None else code if isinstance(code, int) else 1
    if not isinstance(code, (int, type(None))):
        print(code, file=sys.stderr)  # what SystemExit does with a message
    atexit._run_exitfuncs()  # CPython's own exit handlers, run as at an orderly exit
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
