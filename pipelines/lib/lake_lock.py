"""One staging at a time per DuckLake whose catalog several processes open (SQLite, PostgreSQL).

A DuckDB file, and a DuckLake whose catalog is a DuckDB file, are held by one process at a time: DuckDB's own
lock keeps a second run out, naming its holder. An SQLite or PostgreSQL catalog lets several processes write at
once, and two runs started together both staged a new log file: its rows twice in ``core.usage`` and two rows in
``stage.files``, every later run failing its rows-in check until the file was touched (a break test, PostgreSQL).
``held(target)`` serialises them: an exclusive ``flock`` on ``<catalog file>.cachemeter.lock`` beside an SQLite
catalog, a PostgreSQL session advisory lock (``pg_try_advisory_lock``, held by its own connection) on a
PostgreSQL one. The holder writes what it is into the lock file / its connection's ``application_name``, so the
process that waits names it. A process takes each lake's lock once (a ``cachemeter run`` for the whole run,
its ingest asset inside it then finds it held); other targets need none.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.lib import lake

# the advisory lock's key: "cachemtr" as a signed 64-bit integer (one lock per PostgreSQL database, i.e. per lake)
ADVISORY_KEY = int.from_bytes(b"cachemtr", "big")
_HELD: dict[str, object] = {}  # lake target -> the open lock file or connection this process holds


class LakeBusyError(lake.LakeError):
    """Another process stages into the lake; the message names it (one line)."""


def needs_lock(target: str) -> bool:
    """Whether ``target`` is a lake whose catalog several processes can write at once (SQLite, PostgreSQL)."""
    return lake.is_lake(target) and lake.catalog_of(target).startswith(("sqlite:", "postgres:"))


@contextmanager
def held(target: str, wait_seconds: float = 0, poll_seconds: float = 1.0) -> Iterator[None]:
    """Hold ``target``'s staging lock for the block (nothing for a target that ``needs_lock`` says needs none, or that
    this process holds already). Waits up to ``wait_seconds`` for another holder; raises ``LakeBusyError`` naming it,
    ``lake.LakeError`` when the PostgreSQL server cannot be reached."""
    if not needs_lock(target) or target in _HELD:
        yield
        return
    take = _take_postgres if lake.catalog_of(target).startswith("postgres:") else _take_sqlite
    started = time.monotonic()
    while True:
        handle, holder = take(target)
        if handle is not None:
            break
        if time.monotonic() - started >= wait_seconds:
            said = f" after waiting {wait_seconds:g} s" if wait_seconds else ""
            raise LakeBusyError(f"the warehouse {lake.redacted(target)} is being staged into by {holder}{said}; try again when it "
                                "ends, or pass --wait SECONDS")
        time.sleep(poll_seconds)
    _HELD[target] = handle
    try:
        yield
    finally:
        _HELD.pop(target, None)
        handle.close()  # the flock or the advisory lock goes with it


def _me() -> str:
    """This process as a holder names it: ``PID 7210 on host-a (cachemeter run)``."""
    return f"PID {os.getpid()} on {socket.gethostname()} ({' '.join([Path(sys.argv[0]).name, *sys.argv[1:2]])})"


def _take_sqlite(target: str):
    path = Path(str(lake.catalog_file(target)) + ".cachemeter.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        return None, holder
    handle.seek(0)
    handle.truncate()
    handle.write(_me())
    handle.flush()
    return handle, None


def _take_postgres(target: str):
    import psycopg2

    conninfo = lake.catalog_of(target).removeprefix("postgres:")
    try:
        conn = psycopg2.connect(conninfo, application_name=_me()[:63], connect_timeout=10)
    except psycopg2.Error as exc:
        raise lake.LakeError(f"{lake.redacted(target)}: cannot reach the PostgreSQL catalog to take its staging lock: "
                             f"{(str(exc).strip().splitlines() or [type(exc).__name__])[0]}") from exc
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute("select pg_try_advisory_lock(%s)", (ADVISORY_KEY,))
        if cursor.fetchone()[0]:
            return conn, None
        cursor.execute("select a.application_name, a.client_addr from pg_locks l join pg_stat_activity a using (pid) "
                       "where l.locktype = 'advisory' and l.granted and l.classid = %s and l.objid = %s",
                       (ADVISORY_KEY >> 32, ADVISORY_KEY & 0xFFFFFFFF))
        found = cursor.fetchone()
    conn.close()
    return None, (found[0] or f"a session from {found[1]}") if found else "another process"
