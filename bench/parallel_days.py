"""Benchmark: the same days built serially and by several processes on a PostgreSQL-catalog DuckLake.

``python bench/parallel_days.py --requests N --days D --conninfo "host=... port=... user=..." [--workers 2] [--repeat R]``

Generates D days of logs (``generate.py``), creates two lake catalogs (databases ``<prefix>_serial`` and
``<prefix>_parallel`` on the server the conninfo names; the password comes from ``PGPASSWORD``), and runs
``cachemeter run`` on both, side by side:

* ``fresh``: the first run of each (staging, pricing and every day built; staging is serial in both);
* ``rebuild``: ``--all-days`` R times, alternating serial and parallel: nothing is staged again, every
  day is rebuilt, so this is the part ``--parallel`` speeds up.

Prints one JSON line: wall seconds of each run, medians, the ratios serial / parallel, peak RSS of the
runs (the parallel run's workers included: ``RUSAGE_CHILDREN`` is the largest process), and whether the
two lakes hold the same ``marts.daily_savings``. On a shared machine read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate  # noqa: E402


def run(logs: Path, target: str, data: Path, workers: int, *extra: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "run", "--logs", str(logs), "--db", target,
                           "--data-path", str(data), "--parallel", str(workers), *extra],
                          capture_output=True, text=True, cwd=data.parent)
    if done.returncode != 0:
        raise SystemExit(f"cachemeter run failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def savings(target: str) -> list:
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "sql", "select * from marts.daily_savings order by all",
                           "--db", target, "--format", "json"], capture_output=True, text=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--conninfo", required=True, help="libpq conninfo of the server, without dbname")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--prefix", default="bench_lake")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cachemeter-parallel-"))
    logs = work / "logs"
    generate(args.requests, args.days, logs)
    admin = psycopg2.connect(f"{args.conninfo} dbname=postgres")
    admin.autocommit = True
    targets = {}
    for kind in ("serial", "parallel"):
        name = f"{args.prefix}_{kind}"
        admin.cursor().execute(f"drop database if exists {name}")
        admin.cursor().execute(f"create database {name}")
        targets[kind] = f"ducklake:postgres:{args.conninfo} dbname={name}"
    workers = {"serial": 1, "parallel": args.workers}
    fresh = {kind: run(logs, targets[kind], work / f"data-{kind}", workers[kind]) for kind in ("serial", "parallel")}
    rebuild = {"serial": [], "parallel": []}
    for _ in range(args.repeat):
        for kind in ("serial", "parallel"):
            rebuild[kind].append(run(logs, targets[kind], work / f"data-{kind}", workers[kind], "--all-days"))
    median = {kind: statistics.median(times) for kind, times in rebuild.items()}
    print(json.dumps({
        "requests": args.requests, "days": args.days, "workers": args.workers,
        "fresh_seconds": {k: round(v, 2) for k, v in fresh.items()},
        "fresh_ratio": round(fresh["serial"] / fresh["parallel"], 2),
        "rebuild_seconds": {k: [round(t, 2) for t in v] for k, v in rebuild.items()},
        "rebuild_median": {k: round(v, 2) for k, v in median.items()},
        "rebuild_ratio": round(median["serial"] / median["parallel"], 2),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
        "parquet_bytes": {k: sum(p.stat().st_size for p in (work / f"data-{k}").rglob("*.parquet")) for k in targets},
        "same_daily_savings": savings(targets["serial"]) == savings(targets["parallel"]),
    }))


if __name__ == "__main__":
    main()
