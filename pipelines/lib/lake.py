"""The DuckLake warehouse backend: the same schemas, tables and SQL files in a DuckLake catalog.

A warehouse target ``ducklake:<catalog>`` (``--db`` / ``CACHEMETER_DB``) names the catalog, whose
tables' rows sit in Parquet files under the data path (``--data-path`` / ``CACHEMETER_DATA_PATH``):

- ``ducklake:/abs/cachemeter.ducklake``: a DuckDB file as catalog; one process at a time opens it
  (like the embedded DuckDB warehouse), so readers wait for a run to end;
- ``ducklake:sqlite:/abs/cachemeter.sqlite``: an SQLite file as catalog; several processes open it at
  once, and a reader sees the snapshot committed last while a run writes;
- ``ducklake:postgres:<libpq conninfo>``: a PostgreSQL database as catalog.

The lake is attached as ``lake`` and made the default catalog (``USE lake``), so ``core.usage``,
``marts.daily_savings`` and the macros resolve as in the DuckDB file. The data path is needed when the
catalog is created (default for a DuckDB or SQLite catalog: ``<catalog file>.files/`` beside it);
DuckLake records it in the catalog. DuckLake has no primary keys, unique constraints or indexes, and
adds columns with literal defaults only: the schema files use none of the others. The extensions come
from the PyPI packages ``duckdb-extension-<name>`` and are loaded by file path: nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from pathlib import Path

import duckdb

from pipelines.lib import options

PREFIX = "ducklake:"
ALIAS = "lake"
DATA_PATH_ENV = options.BY_NAME["data_path"].env  # CACHEMETER_DATA_PATH
# no extension is fetched or loaded behind cachemeter's back (no network at run time)
NO_AUTOLOAD = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


FORMS = "give ducklake:<file>.ducklake, ducklake:sqlite:<file> or ducklake:postgres:<conninfo>"


class LakeError(ValueError):
    """A DuckLake target cachemeter cannot open: the message names the target and what to change."""


def is_lake(target: str | os.PathLike) -> bool:
    """Whether ``target`` (a ``--db`` value) names a DuckLake catalog rather than a DuckDB file."""
    return str(target).startswith(PREFIX)


def catalog_of(target: str | os.PathLike) -> str:
    """The catalog part of ``ducklake:<catalog>`` (``/abs/x.ducklake``, ``sqlite:/abs/x.sqlite``, ``postgres:...``).

    Raises ``LakeError`` when the target names none (``ducklake:`` alone ended in DuckDB's "Default secret was not
    found", a break test)."""
    catalog = str(target)[len(PREFIX):]
    if not catalog.removeprefix("sqlite:").removeprefix("postgres:").strip():
        raise LakeError(f"--db {redacted(str(target))} names no DuckLake catalog: {FORMS}")
    scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", catalog)
    if scheme and scheme.group(0) not in ("sqlite:", "postgres:"):
        # `ducklake:postgresql:...` built a DuckDB catalog file named "postgresql:host=..." in the working folder, then
        # failed on a missing extension (a break test)
        raise LakeError(f"--db {redacted(str(target))}: {scheme.group(0)!r} is no catalog kind cachemeter opens: "
                        f"{FORMS} (a file whose name holds a colon: ducklake:./{redacted(catalog)})")
    return catalog


def catalog_file(target: str | os.PathLike) -> Path | None:
    """The local file of a DuckDB or SQLite catalog; None for a PostgreSQL one."""
    catalog = catalog_of(target)
    if catalog.startswith("postgres:"):
        return None
    return Path(catalog.removeprefix("sqlite:"))


def postgres_database(target: str | os.PathLike) -> str:
    """The database a ``ducklake:postgres:<conninfo>`` catalog names (``dbname``, key=value or URI form; libpq's default,
    the user's name, when it names none: here ``postgres``)."""
    import psycopg2.extensions

    try:
        found = psycopg2.extensions.parse_dsn(catalog_of(target).removeprefix("postgres:"))
    except psycopg2.ProgrammingError as exc:
        raise LakeError(f"--db {redacted(str(target))}: the PostgreSQL connection string does not parse: "
                        f"{str(exc).strip().splitlines()[0]}") from exc
    return found.get("dbname") or found.get("user") or "postgres"


def redacted(target: str) -> str:
    """``target`` with a password in it (``password=...`` or a URI's ``user:password@``) shown as ``***``: printed in
    run summaries, errors and doctor's table otherwise (a break test)."""
    # a value: quoted as libpq quotes it, else a quote left open (a typo: to the end), else up to the next blank; what
    # follows it unspaced goes too (DuckDB's errors quote the string, "...password=x"Unable: stopping at the quote
    # printed a password holding one, a break test)
    text = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|'.*|\S+)", r"\1***", str(target), flags=re.IGNORECASE)
    # (a URI given where a path was expected is printed as a path, its "//" made one "/")
    return re.sub(r"(://?[^/:@\s]*:)[^@/\s]*@", r"\1***@", text)


def resolved(target: str | os.PathLike) -> str:
    """``target`` with a relative catalog file made absolute (the working directory of the command)."""
    catalog = catalog_of(target)
    scheme = "sqlite:" if catalog.startswith("sqlite:") else ""
    if catalog.startswith("postgres:"):
        return str(target)
    return f"{PREFIX}{scheme}{Path(catalog.removeprefix(scheme)).resolve()}"


def extension_path(name: str) -> Path:
    """The extension file the PyPI package ``duckdb-extension-<name>`` installed for this DuckDB version.

    Raises ``LakeError`` naming the package to install when it is missing.
    """
    package = f"duckdb_extension_{name}"
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise LakeError(f"the DuckDB extension {name} is not installed: pip install "
                        f"duckdb-extension-{name.replace('_', '-')}=={duckdb.__version__}") from None
    path = Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise LakeError(f"{package} has no extension for DuckDB {duckdb.__version__} ({path}): install "
                        f"duckdb-extension-{name.replace('_', '-')}=={duckdb.__version__}")
    return path


def _extensions(target: str, data_path: str | None) -> list[str]:
    catalog = catalog_of(target)
    names = ["ducklake"]
    if catalog.startswith("sqlite:"):
        names.append("sqlite_scanner")
    elif catalog.startswith("postgres:"):
        names.append("postgres_scanner")
    if data_path is None or "://" in data_path:  # None: the catalog's recorded data path, perhaps a bucket
        names.append("httpfs")
    return names


S3_SECRET = "cachemeter_s3"


def create_s3_secret(conn: duckdb.DuckDBPyConnection, environ: dict[str, str] | None = None) -> bool:
    """Create the temporary (in-memory, never persisted) DuckDB secret httpfs reads ``s3://`` data paths with,
    from the standard AWS variables; returns whether one was created (not when no S3 variable is set).

    ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, ``AWS_REGION`` (or
    ``AWS_DEFAULT_REGION``; default us-east-1) and ``AWS_ENDPOINT_URL_S3`` (or ``AWS_ENDPOINT_URL``:
    ``http://host:port`` of MinIO or moto, path-style URLs). The values go into the statement as literals
    (CREATE SECRET takes no parameters) and DuckDB shows a secret redacted (``duckdb_secrets()``).
    """
    env = os.environ if environ is None else environ
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if not (key or endpoint):
        return False
    options = ["TYPE s3", f"REGION {_literal(env.get('AWS_REGION') or env.get('AWS_DEFAULT_REGION') or 'us-east-1')}"]
    if key and secret:
        options += [f"KEY_ID {_literal(key)}", f"SECRET {_literal(secret)}"]
    if env.get("AWS_SESSION_TOKEN"):
        options.append(f"SESSION_TOKEN {_literal(env['AWS_SESSION_TOKEN'])}")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        options += [f"ENDPOINT {_literal(host.rstrip('/'))}", f"USE_SSL {'false' if scheme == 'http' else 'true'}",
                    "URL_STYLE 'path'"]
    conn.execute(f"CREATE OR REPLACE TEMPORARY SECRET {S3_SECRET} ({', '.join(options)})")
    return True


def data_path_for(target: str, data_path: str | None = None) -> str | None:
    """The data path to attach with: ``data_path``, else ``CACHEMETER_DATA_PATH``, else ``<catalog file>.files/``
    for a local catalog that does not exist yet (None: the catalog's recorded one)."""
    chosen = data_path or os.environ.get(DATA_PATH_ENV) or None
    if chosen:
        return chosen if "://" in chosen else str(Path(chosen).resolve())
    file = catalog_file(target)
    if file is not None and not file.exists():
        return f"{file}.files"
    return None


def instance_name(target: str) -> str:
    """The in-memory DuckDB instance a process shares for ``target`` (``duckdb.connect(name)``): the lake is
    attached once per instance, and every connection of a run reuses it while one stays open."""
    return ":memory:cachemeter-" + hashlib.sha256(target.encode()).hexdigest()[:16]


def attach(conn: duckdb.DuckDBPyConnection, target: str, data_path: str | None = None, read_only: bool = False,
           as_of: str | None = None) -> duckdb.DuckDBPyConnection:
    """Load the extensions, attach ``target`` as ``lake`` unless it is attached, and ``USE lake``; returns ``conn``.

    ``as_of``: a snapshot id (digits) or a timestamp; the lake is then read as it was at that snapshot
    (read-only). Raises ``LakeError`` for a missing extension package and ``duckdb.Error`` when DuckLake refuses the catalog (a DuckDB catalog file held by another
    process raises its lock error as ``duckdb.IOException``).
    """
    path = data_path_for(target, data_path)
    names = _extensions(target, path)
    for name in names:
        conn.execute(f"LOAD '{extension_path(name)}'")
    if "httpfs" in names:
        create_s3_secret(conn)
    attached = conn.execute("select count(*) from duckdb_databases() where database_name = $alias",
                            {"alias": ALIAS}).fetchone()[0]
    if not attached:
        if path and path.lower().startswith("s3://"):
            _check_reachable(path)
        elif path and "://" not in path and not (read_only or as_of):
            _check_local_data_path(target, path)
        # no data inlining (DuckLake 1.0 inlines inserts of up to 10 rows into the catalog by default):
        # measured here, an inlined DOUBLE reads back one ulp off (134/145 stored 0.9241379310344828, in
        # Parquet 0.9241379310344827), so a small day's hit rates would differ from the DuckDB file's
        options = ["DATA_INLINING_ROW_LIMIT 0"]
        if path:
            options.append(f"DATA_PATH {_literal(path)}")
        if read_only or as_of:
            options.append("READ_ONLY")
        if as_of:
            options.append(snapshot_option(as_of))
        suffix = f" ({', '.join(options)})" if options else ""
        try:
            conn.execute(f"ATTACH {_literal(target)} AS {ALIAS}{suffix}")
        except duckdb.Error as exc:
            said = str(exc)
            if "creating a new DuckLake is explicitly disabled" in said:  # a reader of a catalog no run created yet
                raise LakeError(f"{redacted(target)} holds no lake yet: `cachemeter run --db ...` creates it") from exc
            if "set the DATA_PATH parameter" in said:  # DuckLake's words for a new PostgreSQL catalog named no option
                raise LakeError(f"{redacted(target)} is a new catalog: give --data-path (or CACHEMETER_DATA_PATH), the "
                                "folder or s3://bucket/prefix its Parquet files go to") from exc
            if as_of and ("No snapshot found" in said or "Failed to cast value" in said):
                # DuckLake's "No snapshot found at version 99999" and DuckDB's timestamp cast error named neither the
                # option nor what it takes (a break test)
                raise LakeError(f"--as-of {as_of}: {_no_snapshot(as_of) if 'No snapshot' in said else 'not a snapshot id or time'}"
                                " (a snapshot id, or a time like '2026-11-20 08:00:00+00'; `cachemeter sql \"select "
                                "snapshot_id, snapshot_time from ducklake_snapshots('lake')\"` lists them)") from exc
            recorded = re.search(r'existing data path in the catalog "([^"]*)"', said)
            if recorded is None:
                raise
            # DuckLake's words, "DATA_PATH parameter ... does not match", gave no way forward (a break test: a lake
            # moved with its files, or created with a mistaken --data-path)
            raise LakeError(f"{redacted(target)}: its catalog records its data files at {recorded.group(1)}, not at "
                            f"{path}: give --data-path {recorded.group(1)} (or CACHEMETER_DATA_PATH), or move the files "
                            "back there; a catalog created with a mistaken --data-path and holding nothing yet can be "
                            "deleted, and the next run creates it anew") from exc
    conn.execute(f"USE {ALIAS}")
    return conn


def _no_snapshot(as_of: str) -> str:
    """What "No snapshot found" means for ``as_of``: an id the lake has not reached, or a time before its first."""
    return "the lake has no snapshot of that id" if re.fullmatch(r"[0-9]+", as_of) else "the lake has no snapshot at or before that time"


def with_files_hint(message: str) -> str:
    """``message``, and when it says a lake's Parquet file is missing, what that usually means: the catalog records
    where its files are, and they are not there (a lake moved, its folder unmounted or emptied: DuckLake's "Cannot
    open file ....parquet" said nothing of it, a break test)."""
    if re.search(r"Cannot open file .*\.parquet", message):
        return (f"{message} (the lake's data files are not where its catalog records them: moved, unmounted or "
                "deleted? `cachemeter doctor` names the recorded folder; --data-path cannot move it)")
    return message


def snapshot_option(as_of: str) -> str:
    """The ATTACH option reading a lake as of a snapshot: its id (ASCII digits only: "²" is a digit to
    ``str.isdigit`` and no number to ``int()``, "invalid literal for int()", a break test) or a time."""
    return f"SNAPSHOT_VERSION {int(as_of)}" if re.fullmatch(r"[0-9]+", as_of) else f"SNAPSHOT_TIME {_literal(as_of)}"


def _check_reachable(data_path: str) -> None:
    """Raise ``LakeError`` (one line, no credential) when the bucket of an ``s3://`` data path cannot be listed:
    otherwise the first write of a run would fail with an HTTP error several lines long."""
    from pipelines.ingest import objectstore

    try:
        objectstore.reachable(data_path)
    except objectstore.ObjectStoreError as exc:
        raise LakeError(f"the DuckLake data path {data_path} cannot be reached: {exc.reason}") from None


def _check_local_data_path(target: str, data_path: str) -> None:
    """Raise ``LakeError`` when a local data path cannot hold the lake's files: a file in its place, or a folder the
    run cannot make. A new local catalog is then not created: DuckLake records the data path in the catalog it creates,
    and a first run given a file (a mistaken ``--data-path``) left a catalog bound to it, which every later run
    refused (a break test)."""
    where = Path(data_path)
    blocker = next((p for p in (where, *where.parents) if p.exists() or p.is_symlink()), None)
    if blocker is not None and not blocker.is_dir():
        raise LakeError(f"--data-path {data_path}: {blocker} is {'a broken link' if blocker.is_symlink() and not blocker.exists() else 'a file'}"
                        ", not a folder: give the folder (or s3://bucket/prefix) the lake's Parquet files go to")
    file = catalog_file(target)
    if file is not None and not file.exists() and not where.is_dir():  # a new catalog: its folder must be makeable
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LakeError(f"--data-path {data_path}: the folder cannot be made ({exc.strerror or exc}): give a folder "
                            "the run may write (the lake's Parquet files go there)") from None


def _literal(text: str) -> str:
    """``text`` as a SQL string literal (ATTACH takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def recorded_data_path(conn: duckdb.DuckDBPyConnection) -> str:
    """The data path the attached lake's catalog records (where its Parquet files are)."""
    return conn.execute(f"select value from ducklake_options('{ALIAS}') where option_name = 'data_path'").fetchone()[0]


def snapshots(conn: duckdb.DuckDBPyConnection) -> list[tuple[int, object]]:
    """``[(snapshot_id, snapshot_time)]`` of the attached lake, oldest first."""
    return conn.execute(f"select snapshot_id, snapshot_time from ducklake_snapshots('{ALIAS}') order by snapshot_id").fetchall()
