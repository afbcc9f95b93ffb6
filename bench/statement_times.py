"""Where a run's time goes, statement by statement: ``python bench/statement_times.py --logs DIR [--db FILE] [--top N]``.

Runs ``cachemeter run --logs DIR --db FILE`` in a child process whose DuckDB connections are wrapped so that
every ``execute`` is timed (wall seconds, on the calling thread) and filed under the ``sql/`` file it ran
(``costs/usage_costs__insert_window``), or, for a statement written in Python, under its first words
(``inline: select day, count(*) ...``). Prints a table of the slowest statements (seconds, calls, share of the
run's wall time) and then one JSON line: ``wall_seconds`` of the whole run, ``statement_seconds`` (their sum;
statements of one thread follow each other, so the sum is at most the run's wall time plus what other
threads ran at the same time) and ``statements``: ``[name, calls, seconds]`` of every statement, slowest first.

Answers "which statement is the 5M day's bottleneck" without a profiler: the figures are DuckDB's own time for
each statement as the run met it (cold or warm buffers, the other process's load), which EXPLAIN ANALYZE of one
statement on a copy does not give. The wrapping costs microseconds per statement. Not part of the test run
(``tests/test_bench_smoke.py`` runs it on a tiny input). The warehouse defaults to a new file in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The child: wrap duckdb.connect before the CLI imports anything, time each execute by the SQL text it ran,
# write the totals to $STATEMENT_TIMES at exit (the CLI runs its exit handlers before it leaves, cli.main).
CHILD = r'''
import atexit, collections, json, os, sys, threading, time
from pathlib import Path
import duckdb

root = Path(sys.argv[1]) / "sql"
names = {path.read_text(encoding="utf-8"): str(path.relative_to(root).with_suffix("")) for path in root.rglob("*.sql")}
totals = collections.defaultdict(lambda: [0, 0.0])
lock = threading.Lock()

def name_of(query):
    text = query if isinstance(query, str) else str(query)
    return names.get(text) or "inline: " + " ".join(text.split())[:80]

class Timed:
    """A DuckDB connection whose execute() is timed; everything else is the connection's own."""
    def __init__(self, conn):
        object.__setattr__(self, "_conn", conn)
    def __getattr__(self, name):
        return getattr(self._conn, name)
    def __setattr__(self, name, value):
        setattr(self._conn, name, value)
    def __enter__(self):
        self._conn.__enter__()
        return self
    def __exit__(self, *exc):
        return self._conn.__exit__(*exc)
    def cursor(self):
        return Timed(self._conn.cursor())
    def execute(self, query, *args, **kwargs):
        start = time.perf_counter()
        try:
            result = self._conn.execute(query, *args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            with lock:
                entry = totals[name_of(query)]
                entry[0] += 1
                entry[1] += seconds
        return self if result is self._conn else result

connect = duckdb.connect
duckdb.connect = lambda *args, **kwargs: Timed(connect(*args, **kwargs))

def write():
    rows = sorted(([name, calls, round(seconds, 4)] for name, (calls, seconds) in totals.items()), key=lambda r: -r[2])
    Path(os.environ["STATEMENT_TIMES"]).write_text(json.dumps(rows), encoding="utf-8")
atexit.register(write)

sys.argv = ["cachemeter", "run", *sys.argv[2:]]
from pipelines.cli import main
main()
'''


def statement_times(logs: Path, db: Path, checkout: Path = REPO) -> tuple[float, list[list]]:
    """Run ``cachemeter run`` of ``checkout`` on ``logs`` into ``db``; returns (wall seconds, the statements as
    ``[name, calls, seconds]``, slowest first). Raises SystemExit with the run's error output when it fails."""
    with tempfile.TemporaryDirectory(prefix="statement-times-") as folder:
        out = Path(folder) / "times.json"
        env = {**{k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}, "STATEMENT_TIMES": str(out),
               "COLUMNS": "200"}
        start = time.perf_counter()
        done = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", CHILD, str(checkout),
                               "--logs", str(logs), "--db", str(db)],
                              cwd=checkout, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"cachemeter run failed:\n{done.stderr[-3000:]}")
        return wall, json.loads(out.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, required=True, help="folder of logs to stage (as cachemeter run --logs)")
    parser.add_argument("--db", type=Path, help="warehouse file (default: a new one in a temporary folder)")
    parser.add_argument("--top", type=int, default=25, help="rows of the printed table")
    parser.add_argument("--checkout", type=Path, default=REPO, help="the checkout whose run is timed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="statement-times-db-") as folder:
        wall, rows = statement_times(args.logs, args.db or Path(folder) / "w.duckdb", args.checkout.resolve())
    total = sum(seconds for _, _, seconds in rows)
    print(f"{'seconds':>8} {'calls':>5} {'share':>6}  statement", file=sys.stderr)
    for name, calls, seconds in rows[:args.top]:
        print(f"{seconds:8.2f} {calls:5d} {seconds / wall:6.1%}  {name}", file=sys.stderr)
    print(json.dumps({"wall_seconds": round(wall, 2), "statement_seconds": round(total, 2), "statements": rows}))


if __name__ == "__main__":
    main()
