"""Staging alone, this checkout against another, alternating in one run (ratios, not absolute seconds).

    .venv/bin/python bench/stage_against.py --against /path/to/other/checkout --requests 1000000 --rounds 3

Each round stages the same generated day (``bench/generate.py``) into a fresh DuckDB file once per
checkout, in its own process with that checkout first on ``sys.path``, the order alternating
(``this, other``, then ``other, this``). Prints one JSON line: wall and CPU seconds of ``stage_logs``
for each checkout in each round (CPU: the process's user + system time, DuckDB's threads included),
their medians and the ratios this / other. A checkout from before the ingest package moved
(``pipelines.lib.ingest``) is staged the same way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (bench/generate.py beside this file)

# run in a child process per staging: <checkout> <logs> <db>; prints "wall cpu rows"
CHILD = r"""
import os, sys, time
checkout, logs, db = sys.argv[1:4]
sys.path.insert(0, checkout)
os.chdir(checkout)
from datetime import date
import duckdb
try:
    from pipelines.ingest import stage
except ImportError:  # a checkout from before the ingest package
    from pipelines.lib import ingest as stage
from pipelines.lib import warehouse
with warehouse.prepare(duckdb.connect(db)) as conn:
    wall, cpu = time.perf_counter(), time.process_time()
    stage.stage_logs(conn, logs, earliest=date(2000, 1, 1))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rows = conn.execute("select count(*) from core.usage").fetchall()[0][0]
print(f"{wall:.3f} {cpu:.3f} {rows}")
"""


def stage_once(checkout: Path, logs: Path, work: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, usage rows) of one staging of ``logs`` by ``checkout`` into a new file under ``work``."""
    db = work / "warehouse.duckdb"  # not a schema's name (stage, core, marts): DuckDB would call it ambiguous
    for stale in (db, db.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(logs), str(db)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"staging by {checkout} failed:\n{done.stderr[-3000:]}")
    wall, cpu, rows = done.stdout.split()[-3:]
    db.unlink(missing_ok=True)
    return float(wall), float(cpu), int(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (its own pipelines/)")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("bench-work/stage-against"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    logs = args.workdir / f"logs-{args.requests}"
    if not logs.exists():
        generate.generate(args.requests, 1, logs)
    this = HERE.parent
    figures: dict[str, list[tuple[float, float, int]]] = {"this": [], "other": []}
    for round_number in range(args.rounds):
        order = [("this", this), ("other", args.against)]
        for name, checkout in order if round_number % 2 == 0 else order[::-1]:
            figures[name].append(stage_once(checkout, logs, args.workdir))
    counts = {rows for runs in figures.values() for *_, rows in runs}
    if len(counts) != 1:  # not the same work: the ratio would mean nothing
        raise SystemExit(f"the checkouts staged different row counts: {sorted(counts)}")
    median = {name: (statistics.median(w for w, _, _ in runs), statistics.median(c for _, c, _ in runs))
              for name, runs in figures.items()}
    print(json.dumps({
        "requests": args.requests, "rounds": args.rounds, "against": str(args.against),
        "wall_s": {name: [w for w, _, _ in runs] for name, runs in figures.items()},
        "cpu_s": {name: [c for _, c, _ in runs] for name, runs in figures.items()},
        "median_wall_s": {name: m[0] for name, m in median.items()},
        "median_cpu_s": {name: m[1] for name, m in median.items()},
        "wall_ratio": round(median["this"][0] / median["other"][0], 3),
        "cpu_ratio": round(median["this"][1] / median["other"][1], 3),
    }))


if __name__ == "__main__":
    main()
