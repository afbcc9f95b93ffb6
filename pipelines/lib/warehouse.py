"""Open the warehouse and make sure its schemas, tables and macros exist.

A warehouse target (``--db`` / ``CACHEMETER_DB``) is an embedded DuckDB file (the default,
``warehouse/cachemeter.duckdb``) or a DuckLake catalog, ``ducklake:<catalog>`` (``lib/lake.py``);
both hold the same schemas and tables and run the same SQL files. Tables are created from
``sql/schema/*.sql`` (one ``CREATE TABLE IF NOT EXISTS`` per file, in name order) and macros from ``sql/macros/*.sql``. Every connection runs with ``TimeZone = 'UTC'``
so that ``TIMESTAMPTZ`` values and day boundaries are UTC whatever the machine's zone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from functools import cache
import hashlib
import json
import math
import os
import re
import shlex
import tempfile
import threading
import time
from pathlib import Path

import duckdb

from pipelines.lib import file_modes, interrupts, lake, options, price_rules, providers, snapshot_copy
from pipelines.lib.sql import statement, statements_in


DEFAULT_DB = "warehouse/cachemeter.duckdb"  # the CLI's warehouse file when --db / CACHEMETER_DB name none (relative to the cwd)
DEFAULT_MEMORY_LIMIT = str(options.BY_NAME["memory_limit"].default)  # DuckDB's own default is 80% of RAM; the nightly run should stay small
# the configuration every read-write connection of a run opens with (the Dagster resource's too): DuckDB
# shares one open database instance between connections of a process only when their configurations match
CONNECTION_CONFIG = {"custom_user_agent": "cachemeter", "max_vacuum_tasks": 0}
# DuckDB's own max_vacuum_tasks (1.5.5): how many merges of adjacent row groups a checkpoint may schedule. A run
# checkpoints after each commit (settle) with none: see settle for why and when it merges after all.
VACUUM_TASKS = 100
# DuckDB's own progress bar (on by default in its Python client) prints to standard output, terminal or not, for
# any statement over 2 s: thousands of carriage-return updates in a nightly job's log (a 5M-request day wrote one per
# tenth of a second of its lane, with estimates jumping between "<1 second" and "~17 minutes remaining"), drawn over
# the CLI's own progress line in a terminal, and mixed into `cachemeter sql --format csv` output on a slow query. The
# CLI reports its own progress (lib/progress.py) on standard error; every connection cachemeter opens turns DuckDB's off.
NO_PROGRESS_BAR = "SET enable_progress_bar = false"


def configured_memory_limit() -> str:
    """DuckDB's memory limit for every connection: ``CACHEMETER_MEMORY_LIMIT`` (e.g. ``2GB``), default 1GB."""
    return str(options.env_value("memory_limit"))


def prepare(conn: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Set UTC and DuckDB's memory limit, create schemas/tables/macros if missing; returns ``conn``.

    The memory limit (``CACHEMETER_MEMORY_LIMIT``, default 1GB) bounds DuckDB's buffer pool; larger
    intermediate results spill to a temporary folder beside the warehouse file. Idempotent.
    """
    conn.execute("SET TimeZone = 'UTC'")
    conn.execute("SET memory_limit = $limit", {"limit": configured_memory_limit()})
    conn.execute(NO_PROGRESS_BAR)
    sha = _definitions_sha()
    if up_to_date(conn, sha):
        return conn  # prepared with these very files: macros persist in the file, tables exist
    for text in _macro_statements():
        conn.execute(text)
    for text in statements_in("schema"):
        conn.execute(text)
    _move_legacy_tables(conn)
    conn.execute("delete from stage.definitions_version")
    conn.execute("insert into stage.definitions_version values ($sha)", {"sha": sha})
    return conn


def _move_legacy_tables(conn: duckdb.DuckDBPyConnection) -> None:
    """Bring a warehouse from before a table was folded into another up to date (``sql/migrations``).

    A ``CREATE TABLE IF NOT EXISTS`` schema cannot say "only if that old table exists", so each move is
    a file run here in one transaction when its old table is present: today ``stage.usage_rows``
    (the staged rows, now stored in ``core.usage`` itself). Files holding duplicates staged before
    ``stage.duplicate_rows`` kept their rows are marked to be staged again, and days priced before
    ``core.usage_costs.list_cost_usd`` are marked pending (repriced), as are days whose ``marts.prefix_families``
    rows predate their day sums for the rules and the report (rebuilt), as are days whose
    ``marts.whatif_cache_ttl`` rows were replayed before the replay was anchored on the log, and days whose
    ``data_quality`` alerts were judged file-wide or without the files that have no good line. Each move is
    safe to repeat: an older release may open the warehouse again and re-create the old table.
    """
    legacy = conn.execute("select count(*) from duckdb_tables() where database_name = current_database() "
                          "and schema_name = 'stage' and table_name = 'usage_rows'").fetchall()[0][0]
    if legacy:
        with transaction(conn):
            conn.execute(statement("migrations/stage_usage_rows__into_core_usage"))
    conn.execute(statement("migrations/stage_files__restage_duplicates"))
    conn.execute(statement("migrations/usage_costs__reprice_without_list_cost"))
    conn.execute(statement("migrations/prefix_families__rebuild_without_day_sums"))
    conn.execute(statement("migrations/whatif_cache_ttl__replay_anchored_on_the_log"))
    conn.execute(statement("migrations/cache_alerts__replace_file_wide_data_quality"))
    conn.execute(statement("migrations/cache_alerts__judge_unaccepted_files"))


def _macro_statements() -> list[str]:
    """The macros generated from data (``lib/providers``: provider spellings; ``lib/price_rules``: the prices a
    request's reported geography and speed change), then the ``sql/macros`` files."""
    return [providers.alias_macro_sql(), price_rules.request_price_macros_sql()] + statements_in("macros")


@cache
def up_to_date(conn: duckdb.DuckDBPyConnection, sha: str | None = None) -> bool:
    """Whether ``conn``'s warehouse was prepared with these very schema and macro files (``stage.definitions_version``
    holds their ``_definitions_sha``): False for a new one, one of an older cachemeter or of a newer one. The next run
    brings it up to date; until then a reader may refuse it (``report`` of an older one: "the warehouse lacks what
    this command reads")."""
    try:
        return conn.execute("select sha from stage.definitions_version").fetchall() == [(sha or _definitions_sha(),)]
    except duckdb.CatalogException:
        return False  # a new warehouse (or one from before the fingerprint)


def _definitions_sha() -> str:
    """sha256 of every macro (files and generated) and ``sql/schema`` file's text, in the order prepare runs them."""
    digest = hashlib.sha256()
    for text in _macro_statements() + statements_in("schema"):
        digest.update(text.encode())
    return digest.hexdigest()


def connect(db_path: str | Path, read_only: bool = False, memory_limit: str | None = None,
            as_of: str | None = None) -> duckdb.DuckDBPyConnection:
    """Open ``db_path`` (created with its folder when writable) and prepare it; read-write connections
    use ``CONNECTION_CONFIG``, so they share the process's open instance of the file.

    ``db_path`` may be a DuckLake target (``ducklake:<catalog>``): the lake is attached as the default
    catalog (``lake.attach``), read-write connections share one in-memory instance per process, and a
    read-only one reads the snapshot committed last, or the one ``as_of`` names (a snapshot id or a
    timestamp; DuckLake only: a DuckDB file raises ``ValueError``).

    Read-only connections get ``TimeZone = 'UTC'``, the memory limit (``memory_limit``, else
    ``CACHEMETER_MEMORY_LIMIT``, else 1GB) and no access outside the warehouse, all locked for the
    session (a caller bounds a statement's time with ``time_limit``). Raises ``FileNotFoundError``
    when a read-only open targets a warehouse that does not exist yet, ``NotAWarehouseError`` for an SQLite
    file (DuckDB would try to download its SQLite reader), ``duckdb.Error`` for a memory
    limit DuckDB cannot read, and ``lake.LakeError`` for a missing DuckLake extension package.
    """
    if lake.is_lake(db_path):
        return _connect_lake(str(db_path), read_only, memory_limit, as_of)
    if as_of is not None:
        raise ValueError(f"--as-of reads an earlier DuckLake snapshot: {db_path} is a DuckDB file, which keeps none")
    path = Path(resolved(db_path))
    kind = _file_kind(path)
    if kind == "sqlite":  # DuckDB would try to download its SQLite reader to open it
        raise NotAWarehouseError(f"{db_path} is an SQLite database, not a DuckDB warehouse file")
    if read_only:
        if path.is_dir():
            raise NotAWarehouseError(f"{db_path} is a folder: --db takes a warehouse file (e.g. warehouse/cachemeter.duckdb)")
        if not path.exists():
            raise FileNotFoundError(f"warehouse {path} does not exist yet: {run_that_builds(db_path)} builds it")
        if kind == "empty":  # DuckDB: "The file ... exists, but it is not a valid DuckDB database file!"
            raise NotAWarehouseError(f"{db_path} is an empty file, not a warehouse: {run_that_builds(db_path)} builds one")
        return _locked_for_reading(duckdb.connect(str(path), read_only=True), memory_limit)
    path.parent.mkdir(parents=True, exist_ok=True)
    return prepare(duckdb.connect(str(path), config=CONNECTION_CONFIG))


def run_that_builds(db_path: str | Path) -> str:
    """The command that builds the warehouse ``db_path`` names, quoted for a shell (`cachemeter run` alone built the
    default warehouse, not the one named: a README walk)."""
    return f"`cachemeter run --db {shlex.quote(str(db_path))}`"


def _connect_lake(target: str, read_only: bool, memory_limit: str | None, as_of: str | None
                  ) -> duckdb.DuckDBPyConnection:
    if read_only:
        if not exists(target):
            raise FileNotFoundError(f"warehouse {target} does not exist yet: {run_that_builds(target)} builds it")
        conn = duckdb.connect(":memory:", config=lake.NO_AUTOLOAD)
        try:
            lake.attach(conn, target, read_only=True, as_of=as_of)
            # its Parquet files stay readable once access outside the warehouse is switched off below
            conn.execute("SET allowed_directories = $dirs", {"dirs": [lake.recorded_data_path(conn)]})
        except BaseException:
            conn.close()
            raise
        return _locked_for_reading(conn, memory_limit)
    file = lake.catalog_file(target)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
    conn = duckdb.connect(lake.instance_name(target), config={**CONNECTION_CONFIG, **lake.NO_AUTOLOAD})
    try:
        lake.attach(conn, target)
    except BaseException:
        conn.close()
        raise
    return prepare(conn)


def _locked_for_reading(conn: duckdb.DuckDBPyConnection, memory_limit: str | None) -> duckdb.DuckDBPyConnection:
    """``conn`` with UTC, the memory limit and no access outside the warehouse, locked."""
    try:
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("SET memory_limit = $limit", {"limit": memory_limit or configured_memory_limit()})
        conn.execute(NO_PROGRESS_BAR)
        # ad-hoc SQL reads the warehouse only: no ATTACH, COPY TO, file readers or extension installs;
        # locked last, so neither this nor the limits above can be switched back in the session
        conn.execute("SET enable_external_access = false")
        conn.execute("SET lock_configuration = true")
    except BaseException:
        conn.close()
        raise
    return conn


def exists(db_path: str | Path) -> bool:
    """Whether the warehouse was created: its DuckDB file or DuckLake catalog file (a PostgreSQL catalog: True)."""
    if lake.is_lake(db_path):
        file = lake.catalog_file(db_path)
        return file is None or file.exists()
    return Path(db_path).exists()


# DuckDB names a file's catalog after its stem: a warehouse file called core.duckdb makes every
# ``core.<table>`` ambiguous between the catalog and the schema (DuckDB: "Ambiguous reference to catalog
# or schema"), so these stems are refused with that reason before the file is created
SCHEMA_NAMES = ("core", "marts", "stage")


def resolved(db_path: str | Path) -> str:
    """``db_path`` with a relative file (DuckDB warehouse or DuckLake catalog) made absolute.

    Raises ``ValueError`` for a DuckDB file named after one of the warehouse's schemas (``SCHEMA_NAMES``) or in a
    folder whose path holds a ``?``, ``lake.LakeError`` for a DuckLake target naming no catalog or an unknown kind.
    """
    target = lake.resolved(db_path) if lake.is_lake(db_path) else str(Path(db_path).resolve())
    if not lake.is_lake(db_path):
        refuse_schema_name(Path(db_path))
    # a DuckDB file, or a DuckLake's DuckDB catalog file (SQLite and PostgreSQL catalogs write no DuckDB log)
    duckdb_file = target if not lake.is_lake(target) else (
        None if lake.catalog_of(target).startswith(("sqlite:", "postgres:")) else lake.catalog_of(target))
    if duckdb_file is not None and Path(duckdb_file).exists() and not Path(duckdb_file).is_file() \
            and not Path(duckdb_file).is_dir():  # (a folder has its own message where it is opened)
        # `--db /dev/null` ended in DuckDB's "Could not fsync file /dev/null: Invalid argument" (a break test)
        raise TargetError(f"--db {db_path}: not a regular file (a device, FIFO or socket): give a warehouse file")
    if duckdb_file is not None and "?" in str(Path(duckdb_file).parent):
        # DuckDB names the write-ahead log by inserting ".wal" before the first "?" (read as URL parameters): under a
        # folder holding one, a run failed to commit, "Cannot open file /a/q.wal?m/w.duckdb", every time (a break test)
        raise TargetError(f"--db {db_path}: DuckDB cannot keep a warehouse in a folder whose path holds '?' (its "
                         "write-ahead log would go to a folder that does not exist): choose a folder without it")
    return target


def refuse_schema_name(path: Path) -> None:
    """Raises ``ValueError`` for a DuckDB file named after one of the warehouse's schemas (``SCHEMA_NAMES``):
    DuckDB names the catalog after the file, so ``core.usage`` in ``core.duckdb`` is ambiguous (Binder Error)."""
    if path.stem.lower() in SCHEMA_NAMES:
        raise TargetError(f"the warehouse file {path.name} is named after the warehouse's schema {path.stem!r}: DuckDB "
                         f"would call every {path.stem.lower()}.<table> ambiguous; name it otherwise, e.g. "
                         f"{path.with_name('cachemeter' + path.suffix).name}")


def refuse_shared_snapshot(path: Path) -> None:
    """Raises ``ValueError`` when a run of the warehouse ``path`` would publish over another warehouse: a file named
    like a snapshot (``a.snapshot.duckdb``: a run of ``a.duckdb`` beside it replaces it), or ``a`` beside a DuckDB
    file ``a.duckdb`` (or the reverse), which both publish ``a.snapshot.duckdb`` and ``a.report.html``, or a file
    another warehouse's run writes or removes (``a.report.html``, ``report.html``, ``a.duckdb.wal``,
    ``a.snapshot.duckdb.partial``, ``a.unbuilt.json``). Checked before a run opens the file; reading is never refused."""
    name = path.name
    for published in (".snapshot.duckdb", ".snapshot.duckdb.spare", ".snapshot.duckdb.partial"):
        if name.endswith(published) and name != published:
            raise ValueError(f"the warehouse file {name} is named like a snapshot: a run of "
                             f"{name[:-len(published)]}.duckdb beside it would replace it; name it otherwise")
    for written, by in ((".report.html", "a warehouse's report"), (".wal", "DuckDB's write-ahead log of another file"),
                        (".unbuilt.json", "a warehouse's record of unbuilt days")):
        if name.endswith(written) or name == written.lstrip("."):
            raise ValueError(f"the warehouse file {name} is named like {by}: a run of the warehouse it belongs "
                             f"to would replace or delete it; name it otherwise, e.g. ending in .duckdb")
    if name == ".duckdb":
        return
    twin = path.with_name(name[: -len(".duckdb")]) if name.endswith(".duckdb") else path.with_name(name + ".duckdb")
    if _own_name(twin) != _own_name(path):  # c.duckdb.duckdb publishes c.duckdb.snapshot.duckdb, c.duckdb c.snapshot.duckdb
        return
    if _is_duckdb_file(twin):
        raise ValueError(f"{name} and {twin.name} in one folder would publish one snapshot "
                         f"({snapshot_path(path).name}) and one report; give this warehouse another name or folder")


def _is_duckdb_file(path: Path) -> bool:
    """Whether ``path`` is a regular file opening with DuckDB's header (the magic ``DUCK`` at byte 8)."""
    return _file_kind(path) == "duckdb"


def _file_kind(path: Path) -> str | None:
    """What the regular file ``path`` holds by its first bytes: ``duckdb`` (the magic ``DUCK`` at byte 8),
    ``sqlite`` (``SQLite format 3``), ``empty``, ``other``; None when it is no regular file or cannot be read."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    if not head:
        return "empty"
    return "duckdb" if head[8:12] == b"DUCK" else "sqlite" if head == b"SQLite format 3\0" else "other"


def refuse_foreign_file(path: Path) -> None:
    """Raises ``ValueError`` when ``path`` exists and is not a DuckDB file (an SQLite database, a log, a CSV): DuckDB
    would try to download its SQLite reader to open one, or fail deep inside a run. A missing file is fine (a run
    creates the warehouse); so is an empty one (``touch w.duckdb``), which is removed here so the run can create it
    (DuckDB refuses to open an empty file: "not a valid DuckDB database file")."""
    if path.is_dir():  # DuckDB's own words: "IO Error: Could not read from file ...: Is a directory"
        raise ValueError(f"--db {path} is a folder: give the warehouse file to create or use, e.g. {path / 'cachemeter.duckdb'}")
    kind = _file_kind(path)
    if kind == "empty":
        path.unlink()
    if kind in ("sqlite", "other"):
        what = "an SQLite database" if kind == "sqlite" else "not a DuckDB file"
        raise ValueError(f"--db {path} is {what}: give a cachemeter warehouse (a DuckDB file) or a new file name")


def for_readers(db_path: str | Path) -> str | Path:
    """What readers open: a DuckDB file's published snapshot (the file itself before the first one); a
    DuckLake target itself, whose readers see its last committed snapshot while a run writes."""
    if lake.is_lake(db_path):
        return str(db_path)
    return snapshot_path(db_path) if snapshot_path(db_path).exists() else Path(db_path)


class NotAWarehouseError(ValueError):
    """``--db`` names something that is not a cachemeter warehouse: a folder, a file that is not DuckDB, or a
    DuckDB file without cachemeter's tables. The message is one line and says what to do."""


class TargetError(ValueError):
    """A ``--db`` cachemeter refuses before opening it (a device, a file named after a schema, a folder holding '?'):
    the message names the value and what to give instead; every command prints it as one line."""


def open_for_reading(db_path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to what readers open (``for_readers``: the snapshot when there is one), checked to
    be a cachemeter warehouse (it has ``core.usage``).

    Raises FileNotFoundError when nothing is there, NotAWarehouseError when it is not a warehouse (a folder,
    not a DuckDB file, no cachemeter tables), duckdb.IOException for a lock held by another process.
    """
    source = for_readers(db_path)
    if not lake.is_lake(source):
        path = Path(source)
        if not path.exists():  # a folder and an empty file: connect says so
            raise FileNotFoundError(f"warehouse {db_path} does not exist: {run_that_builds(db_path)} builds it")
    try:
        conn = connect(source, read_only=True)
    except duckdb.IOException as exc:
        if lock_holder(exc) is not None:
            raise
        if lake.is_lake(source):  # a server down, a lake's files missing: not "not a DuckDB warehouse file" (a break test)
            raise NotAWarehouseError(f"{lake.redacted(str(db_path))} cannot be opened: "
                                     f"{lake.with_files_hint(str(exc).splitlines()[0])}") from exc
        if Path(source) != Path(db_path):  # the snapshot, not the warehouse, is damaged
            # (a truncated snapshot was reported as "<warehouse> is not a DuckDB warehouse file", a break test)
            raise NotAWarehouseError(f"the snapshot {source} cannot be read ({str(exc).splitlines()[0]}): the next "
                                     f"successful `cachemeter run` publishes it again; meanwhile `cachemeter sql --live` "
                                     f"reads {db_path} itself when no run holds it") from exc
        raise NotAWarehouseError(f"{db_path} is not a DuckDB warehouse file ({str(exc).splitlines()[0]})") from exc
    found = {f"{schema}.{table}" for schema, table in conn.execute(
        "select schema_name, table_name from duckdb_tables() where database_name = current_database() "
        "union all select schema_name, view_name from duckdb_views() where database_name = current_database()").fetchall()}
    if "core.usage" not in found:
        conn.close()
        raise NotAWarehouseError(f"{db_path} is a DuckDB file without cachemeter's tables (no core.usage): "
                                 f"`cachemeter run --db <a new file>` builds a warehouse")
    missing = [name for name in READERS_TABLES if name not in found]
    if missing:  # a file of someone else's with a core.usage, or a warehouse cut short: one line, not a Catalog Error
        conn.close()
        raise NotAWarehouseError(f"{db_path} has core.usage but not {', '.join(missing)}: not a cachemeter "
                                 "warehouse (give --db the file `cachemeter run` built; a run on a new file builds one)")
    return conn


def reader_error(exc: Exception, db_path: str | Path, live: bool = False) -> str:
    """One line for a reader (``sql``, ``report``, ``export``, ``whatif``) that could not open ``db_path``: DuckDB's
    first line, and for a lock held by a run what to do about it. A lock with no snapshot is the first run (readers
    read the snapshot otherwise); on a DuckLake, its DuckDB catalog file; with ``live``, the warehouse itself."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if not (isinstance(exc, duckdb.IOException) and "lock" in first.lower()):
        return lake.with_files_hint(first)
    if lake.is_lake(db_path):
        return (first + " (a run holds the DuckLake's DuckDB catalog file: a ducklake:sqlite: or ducklake:postgres: "
                "catalog is read while a run writes)")
    if live and snapshot_path(db_path).exists():
        return first + " (a run holds the warehouse's write lock: drop --live to read the snapshot)"
    return first + (" (the first run on this warehouse is still writing it and has published no snapshot to read yet: "
                    "try again when it ends)")


# the tables and views report, whatif and export read, each created by sql/schema/ when a run prepares a warehouse
READERS_TABLES = ("core.usage", "core.usage_costs", "core.usage_priced", "core.quarantine", "stage.pending_days",
                  "marts.daily_savings", "marts.prefix_families", "marts.cache_alerts", "marts.cache_incidents",
                  "marts.whatif_routing", "marts.whatif_cache_ttl")


def unbuilt_days_note(conn: duckdb.DuckDBPyConnection | None, db_path: str | Path | None = None) -> str | None:
    """One line naming the UTC days staged but not built yet in what ``conn`` reads (``stage.pending_days``; None:
    no snapshot to read) or, for the warehouse ``db_path``, staged since its snapshot was published
    (``record_unbuilt_days``), so a reader knows their numbers are missing or old (a run failed, or one is under
    way); None when there are none."""
    days = set() if conn is None else {day for (day,) in conn.execute("select distinct day from stage.pending_days").fetchall()}
    if db_path is not None and not lake.is_lake(db_path):
        try:
            recorded = json.loads(unbuilt_days_path(db_path).read_text(encoding="utf-8"))["unbuilt_days"]
            days |= {date.fromisoformat(day) for day in recorded}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError):  # unreadable: say so rather than nothing
            return (f"{unbuilt_days_path(db_path).name} cannot be read: days may be staged but not built yet "
                    "(a run did not finish); the next run builds them")
    if not days:
        return None
    first, last, count = min(days), max(days), len(days)
    span = f"{first}" if count == 1 else f"{count} UTC days from {first} to {last}"
    return (f"{span} staged but not built yet (the last run did not finish, or one is under way): their numbers "
            "are missing or out of date here until a run builds them")


class WarehouseBusyError(RuntimeError):
    """Another process holds the warehouse file's write lock; the message names the holder (one line)."""


_LOCK_HOLDER = re.compile(r"held in (.+?) \(PID (\d+)\)")
# a reader that opens the warehouse itself for a moment (`cachemeter doctor`, the pending-days sensor's tick: tens of
# milliseconds) is waited out this long even with --wait 0, so a nightly run starting in that moment is not refused
BRIEF_HOLD_SECONDS = 2.0
_COMMAND_CHARACTERS = 160


def lock_holder(error: duckdb.IOException) -> str | None:
    """Who holds the warehouse, from DuckDB's lock error: ``"PID 123 (cachemeter run --logs l --db w.duckdb)"``
    with the holder's command line where this system shows it (Linux ``/proc``), else DuckDB's words
    ``"PID 123 (/usr/bin/python3)"``; None when the error is not a lock conflict."""
    text = str(error)
    if "lock" not in text.lower():
        return None
    match = _LOCK_HOLDER.search(text)
    if not match:
        return "another process"
    pid = match.group(2)
    return f"PID {pid} ({command_line(int(pid)) or match.group(1)})"


def command_line(pid: int) -> str | None:
    """The command process ``pid`` runs, as a user typed it (``cachemeter run --logs l``: the interpreter and a
    ``-m pipelines.cli`` or the script's folder left out), cut to 160 characters; None where it cannot be read."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return None
    return typed_command([w for w in words if w])


def typed_command(words: list[str]) -> str | None:
    """``command_line``'s words as a user typed them, cut to 160 characters; None for none."""
    if len(words) >= 3 and words[1] == "-m" and words[2] == "pipelines.cli":
        words = ["cachemeter", *words[3:]]
    elif len(words) >= 2 and Path(words[1]).name == "cachemeter":
        words = ["cachemeter", *words[2:]]
    elif words and Path(words[0]).name == "cachemeter":
        words = ["cachemeter", *words[1:]]
    text = " ".join(words)
    if not text:
        return None
    return text if len(text) <= _COMMAND_CHARACTERS else text[:_COMMAND_CHARACTERS - 3] + "..."


@contextmanager
def held_for_run(db_path: str | Path, wait_seconds: float = 0, poll_seconds: float = 1.0
                 ) -> Iterator[duckdb.DuckDBPyConnection]:
    """Keep the warehouse open in this process for a whole run; waits up to ``wait_seconds`` for another
    process's write lock. Yields a connection.

    Each asset opens and closes its own connection; while one stays open here, DuckDB hands those the
    already-open instance instead of opening the file again (which reads its metadata and replays its
    write-ahead log: about 0.1 s per asset on a warehouse with a month of history). Connections to the
    same file inside the block must use ``CONNECTION_CONFIG`` (``connect`` and the Dagster resource do).

    DuckDB takes the lock when the file is opened and has no option to wait for it, hence this loop. Even with
    ``wait_seconds`` 0 a holder is waited out for ``BRIEF_HOLD_SECONDS`` (polled every tenth of a second): a reader
    that opened the warehouse for a moment (``cachemeter doctor``, the pending-days sensor) would otherwise refuse a
    nightly run that starts in that moment. Raises ``WarehouseBusyError`` naming the holder (``lock_holder``) when
    the wait runs out; nothing is written before. A DuckLake with an SQLite or PostgreSQL catalog, which DuckDB does
    not lock, is held by ``lake_lock.held`` (``lake_lock.LakeBusyError`` naming the holder).
    """
    from pipelines.lib import lake_lock

    with lake_lock.held(str(db_path), wait_seconds):  # an SQLite or PostgreSQL lake: one run stages at a time
        yield from _held_open(db_path, wait_seconds, poll_seconds)


def _held_open(db_path: str | Path, wait_seconds: float, poll_seconds: float) -> Iterator[duckdb.DuckDBPyConnection]:
    started = time.monotonic()
    while True:
        try:
            conn = connect(db_path)
            break
        except duckdb.IOException as exc:
            holder = lock_holder(exc)
            if holder is None:
                raise
            waited = time.monotonic() - started
            interrupts.check()  # Ctrl-C while waiting: a held signal stops the wait (lib/interrupts.py)
            if waited >= max(wait_seconds, BRIEF_HOLD_SECONDS):
                said = f" after waiting {wait_seconds:g} s" if wait_seconds else ""
                raise WarehouseBusyError(f"the warehouse {db_path} is in use by {holder}{said}; "
                                         "try again when that process lets it go, or pass --wait SECONDS") from None
            time.sleep(0.1 if waited < BRIEF_HOLD_SECONDS else poll_seconds)
    kept = _keep_open(db_path)
    try:
        with conn:
            yield conn
    finally:
        if kept is not None:
            _KEPT_OPEN.pop(kept[0], None)
            os.close(kept[1])  # after DuckDB closed the file: its lock went with it


# the warehouse files this process holds for a run (``held_for_run``), each with a descriptor kept open for reading:
# DuckDB's lock on a file is a POSIX record lock, dropped by the system as soon as the process closes any descriptor
# of that file, so code that reads the file during the run (the snapshot copy) reads through this one, never closed
# before the run ends
_KEPT_OPEN: dict[str, int] = {}


def _keep_open(db_path: str | Path) -> tuple[str, int] | None:
    if lake.is_lake(db_path):
        return None
    key = os.path.realpath(db_path)
    try:
        fd = os.open(key, os.O_RDONLY)
    except OSError:  # DuckDB opened it: not expected; the snapshot copy then opens it itself
        return None
    _KEPT_OPEN[key] = fd
    return key, fd


def kept_descriptor(db_path: str | Path) -> int | None:
    """A descriptor of the warehouse file this process holds for a run (``held_for_run``), open for reading until the
    run ends; None outside a run. Read the file through it: closing a descriptor of one's own would drop DuckDB's lock
    on the file for the rest of the run."""
    return _KEPT_OPEN.get(os.path.realpath(db_path))


@contextmanager
def time_limit(conn: duckdb.DuckDBPyConnection, seconds: float | None) -> Iterator[duckdb.DuckDBPyConnection]:
    """Interrupt ``conn``'s statement when the block runs longer than ``seconds`` (None, 0, inf or above
    ``threading.TIMEOUT_MAX``: no limit); the
    statement then raises ``duckdb.InterruptException``.

    A timer calling ``conn.interrupt()``, because DuckDB 1.5 has no ``max_execution_time`` setting.
    """
    # inf, or more than a timer can wait (threading.TIMEOUT_MAX, about 292 years: longer raised OverflowError in the
    # timer's thread, a break test): no limit
    timer = (threading.Timer(seconds, conn.interrupt) if seconds and math.isfinite(seconds)
             and seconds < threading.TIMEOUT_MAX else None)
    if timer:
        timer.daemon = True
        timer.start()
    try:
        yield conn
    finally:
        if timer:
            # joined, not only cancelled: a daemon timer thread still alive when the interpreter exits
            # is torn down inside DuckDB's C++ frames, which aborts the process ("exception not rethrown")
            timer.cancel()
            timer.join()


@contextmanager
def transaction(conn: duckdb.DuckDBPyConnection, settle_after: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block in one transaction: commit at the end, roll back and re-raise on any error.

    One transaction per partition or file write means readers never see half of it. The commit is
    followed by a checkpoint of a DuckDB file (``settle``), without which DuckDB 1.5.5 can hide a later
    transaction's committed rows from this process; ``settle_after=False`` leaves that checkpoint to the
    caller (``settle(conn, compact=...)`` right after the block).
    """
    conn.execute("begin transaction")
    try:
        yield conn
    except BaseException:
        conn.execute("rollback")
        raise
    conn.execute("commit")
    if settle_after:
        settle(conn)


def settle(conn: duckdb.DuckDBPyConnection, compact: bool = False) -> None:
    """``CHECKPOINT`` a DuckDB warehouse file after a commit, so a later commit's rows stay visible.

    DuckDB 1.5.5, measured here: staging two 150,000-request days of ``bench/generate.py`` in one run
    (one transaction per file) hid the second file's committed rows from every later query of that run,
    though the file held them (a reopen or a manual ``CHECKPOINT`` showed them), and the accounting check
    stopped the run; at 20M requests over four days, three of four files. With the automatic checkpoint's
    threshold (``checkpoint_threshold``, 16 MiB) set to 1 MiB or to 1 GiB for the whole run it did not
    happen, nor with a checkpoint after each commit, which is what this does
    (``tests/sql/test_log_folders.py::test_every_large_file_of_a_run_stays_visible_to_the_rest_of_the_run``).
    A DuckLake catalog (the default database named ``lake.ALIAS``) is left alone: its ``CHECKPOINT`` is
    table maintenance, not this.

    The checkpoint merges no row groups unless ``compact`` (the caller deleted rows: a rebuilt window).
    DuckDB's checkpoint also "vacuums": it rewrites runs of adjacent row groups whose rows fit in fewer
    (up to ``max_vacuum_tasks``, 100 by default, anywhere in the file). An appended day leaves part-filled
    row groups at a table's tail (parallel inserts), so with merging on, every commit rewrote the tail of
    ``core.usage_costs``, old days included: measured on 30 days of 200,000 requests, the new day's cost
    commit checkpointed in 0.78-0.98 s against 0.01 s on an empty warehouse, and in 0.04 s without merging
    (``bench/README.md``, "A new day on 30 loaded days"). Row groups emptied by a delete are dropped
    either way; those left part-deleted are merged by the next compacting checkpoint.
    """
    if conn.execute("select current_database()").fetchone()[0] == lake.ALIAS:
        return
    if not compact:
        conn.execute("checkpoint")
        return
    conn.execute(f"set max_vacuum_tasks = {VACUUM_TASKS}")
    try:
        conn.execute("checkpoint")
    finally:
        conn.execute(f"set max_vacuum_tasks = {CONNECTION_CONFIG['max_vacuum_tasks']}")


def report_path(db_path: str | Path) -> Path:
    """Where a run writes its report: beside the DuckDB file or the DuckLake catalog file (a PostgreSQL
    catalog: the working directory, ``<database>.report.html``), named ``report.html`` for the default warehouse file (``cachemeter.duckdb``:
    ``warehouse/report.html``) and ``<name>.report.html`` for any other (``_own_name``), so warehouses sharing a
    folder each keep their own report (one overwrote the other's)."""
    if lake.is_lake(db_path):
        file = lake.catalog_file(db_path)
        if file is None:  # a PostgreSQL catalog: named for its database (every such lake wrote ./report.html, a break test)
            return Path.cwd() / f"{lake.postgres_database(db_path)}.report.html"
        file = _target(file)
        return file.parent / _report_name(file)
    file = _target(Path(db_path))
    return file.with_name(_report_name(file))


def _target(file: Path) -> Path:
    """``file`` itself, or where it points when it is a symlink: a run opens the warehouse by its resolved path
    (``resolved``) and publishes beside the target, so the paths readers and the summary derive from a symlink
    must name the files beside the target too (they named files beside the symlink that no run wrote, and
    ``cachemeter sql`` then read the live warehouse, which a run blocks, instead of its snapshot)."""
    return Path(os.path.realpath(file)) if file.is_symlink() else file


def _report_name(file: Path | None) -> str:
    return "report.html" if file is None or file.name == Path(DEFAULT_DB).name else f"{_own_name(file)}.report.html"


def _own_name(file: Path) -> str:
    """The name a warehouse file lends the files published beside it: its name without ``.duckdb``
    (``team-a.duckdb``: ``team-a``), else its whole name (``team-a.db``, ``cachemeter.ducklake``), so two
    warehouses in one folder whose names share a stem (``a.duckdb`` and ``a.db``) never share a snapshot
    or a report (they did: each run replaced the other's snapshot, and readers read the wrong warehouse); the
    names that still would (``a`` beside ``a.duckdb``, ``a.snapshot.duckdb``) are refused (``refuse_shared_snapshot``)."""
    return file.name[: -len(".duckdb")] if file.name.endswith(".duckdb") and file.name != ".duckdb" else file.name


def snapshot_path(db_path: str | Path) -> Path:
    """Where the read-only snapshot of ``db_path`` is published: ``<name>.snapshot.duckdb`` beside it
    (``<name>``: ``_own_name``; beside the target of a symlink, ``_target``)."""
    path = _target(Path(db_path))
    return path.with_name(f"{_own_name(path)}.snapshot.duckdb")


def publish_snapshot(conn: duckdb.DuckDBPyConnection, db_path: str | Path) -> dict[str, object]:
    """Checkpoint the warehouse and atomically replace its snapshot with a copy; returns what was published
    (``{"snapshot": path, "bytes": size, "bytes_written": n, "spare_reused": bool}``; a DuckLake:
    ``{"snapshot": "ducklake snapshot N"}``, nothing copied).

    DuckDB lets one process write a file and blocks every other process, readers too; ad-hoc SQL
    reads this snapshot instead, so it neither blocks nor is blocked by a run. Readers that have the
    old snapshot open keep reading it (the rename leaves their file intact). The copy rewrites only the
    blocks that changed since the snapshot before it (``snapshot_copy``: that one is kept beside it as
    ``<snapshot>.spare``). A DuckLake's readers read its committed snapshots, so it needs no copy.
    """
    if lake.is_lake(db_path):
        return {"snapshot": f"ducklake snapshot {lake.snapshots(conn)[-1][0]}"}
    conn.execute("checkpoint")
    block_size = conn.execute("select block_size from pragma_database_size() where database_name = current_database()"
                              ).fetchone()[0]
    target = snapshot_path(db_path)
    published = snapshot_copy.publish(Path(db_path), target, block_size, kept_descriptor(db_path))
    unbuilt_days_path(db_path).unlink(missing_ok=True)  # the snapshot now holds stage.pending_days as they are
    return {"snapshot": str(target), **published}


def unbuilt_days_path(db_path: str | Path) -> Path:
    """The file ``<name>.unbuilt.json`` beside a DuckDB warehouse (``_own_name``) that names the UTC days staged
    but not built yet while its snapshot is older than its staging (``record_unbuilt_days``)."""
    path = _target(Path(db_path))
    return path.with_name(f"{_own_name(path)}.unbuilt.json")


def record_unbuilt_days(conn: duckdb.DuckDBPyConnection, db_path: str | Path) -> list[str]:
    """After staging, write the days of ``stage.pending_days`` (UTC dates, ISO text) to ``unbuilt_days_path`` for the
    readers of the snapshot; ``publish_snapshot`` removes the file. Returns the days written (none: the file is
    removed). A snapshot holds ``stage.pending_days`` only as it was when a run published it, so a run that died
    after staging (or one under way) left readers the night before's numbers without a word: a break test killed a
    run while it priced a new day, and the report and export said nothing of it. A DuckLake writes no file: its
    readers read its last commit, staging's among them. The file is replaced atomically."""
    if lake.is_lake(db_path):
        return []
    days = [str(day) for (day,) in conn.execute("select distinct day from stage.pending_days order by day").fetchall()]
    target = unbuilt_days_path(db_path)
    if not days:
        target.unlink(missing_ok=True)
        return days
    # written under a hidden name of this process's own, then renamed: no name a warehouse could have
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target.parent, prefix=f".{target.name}.",
                                     suffix=".tmp", delete=False) as partial:
        partial.write(json.dumps({"unbuilt_days": days}) + "\n")
    file_modes.as_created(partial.name)  # readers under another account read it
    os.replace(partial.name, target)
    return days
