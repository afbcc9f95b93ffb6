"""Benchmark the fixed cost of a run: ``python bench/one_line.py [--repeat R] [--against CHECKOUT] [--files N]``, one JSON line.

Measures, alternating ``R`` times so that machine noise hits every figure alike (medians and every round):

* ``run``: ``cachemeter run`` on a one-line log (the first line of
  ``fixtures/formats/anthropic_messages/messages.jsonl``) into a new warehouse: one UTC day staged, priced,
  built, checked and published (target: at most 3 s wall);
* ``rerun``: the same command again on that warehouse, nothing new (staging, then publishing only);
* the floor below any run: ``python`` starting (``python_start``), starting and opening the warehouse
  with DuckDB (``duckdb_open``), ``import dagster`` (``import_dagster``) and ``import great_expectations``
  (``import_gx``, which every run that builds a day pays, since its checks validate the day: in the run's
  side process, ``pipelines/lib/side_process.py``, beside the run's own work), and ``import_stack``: every
  library a one-line run loads in its two processes (those two, polars, Altair, vl-convert, genai-prices)
  and Dagster's ephemeral instance, all in one process.

Each figure is wall seconds and CPU seconds (user + system of the child process): on this shared
machine the wall time follows the load, the CPU time much less. With ``--against CHECKOUT`` the run and
rerun of another checkout (its ``.venv/bin/python -m pipelines.cli``, e.g. ``/work/main``) are measured
too, in the same rounds, and the line gives the ratios. With ``--files N`` the log is N one-request files (a gateway
writing a file per request): what a run and a rerun cost per file staged and listed. Not part of the test run.
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

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl"
STACK = ("import dagster, great_expectations, polars, altair, vl_convert, genai_prices; "
         "dagster.DagsterInstance.ephemeral()")


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process; raises SystemExit when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**{k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}, "COLUMNS": "200"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_commands(checkout: Path, logs: Path, db: Path) -> list[str]:
    python = checkout / ".venv" / "bin" / "python"
    return [str(python), "-m", "pipelines.cli", "run", "--logs", str(logs), "--db", str(db)]


def one_round(checkouts: dict[str, Path], work: Path) -> dict[str, tuple[float, float]]:
    """Every figure once: the floor pieces, then each checkout's run and rerun on a new warehouse."""
    python = str(REPO / ".venv" / "bin" / "python")
    db = work / "floor.duckdb"
    figures = {
        "python_start": timed([python, "-c", "pass"], REPO),
        "duckdb_open": timed([python, "-c", f"import duckdb; duckdb.connect({str(db)!r}).execute('select 1').fetchall()"],
                             REPO),
        "import_dagster": timed([python, "-c", "import dagster"], REPO),
        "import_gx": timed([python, "-c", "import great_expectations"], REPO),
        "import_stack": timed([python, "-c", STACK], REPO),
    }
    logs = work / "logs"
    for name, checkout in checkouts.items():
        target = work / (name or "this_") / "w.duckdb"
        for stale in target.parent.glob("*"):
            stale.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        figures[f"{name}run"] = timed(run_commands(checkout, logs, target), checkout)
        figures[f"{name}rerun"] = timed(run_commands(checkout, logs, target), checkout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (medians reported)")
    parser.add_argument("--against", type=Path, help="another checkout to measure in the same rounds (its .venv)")
    parser.add_argument("--files", type=int, default=1,
                        help="the log as this many one-request files (the fixture's first line, each with its own id: a "
                             "gateway writing a file per request); the run and rerun figures are then those of the folder")
    args = parser.parse_args()
    checkouts = {"": REPO} | ({"against_": args.against.resolve()} if args.against else {})
    with tempfile.TemporaryDirectory(prefix="cachemeter-one-line-") as tmp:
        work = Path(tmp)
        (work / "logs").mkdir()
        with FIXTURE.open() as handle:
            first = handle.readline()
        if args.files <= 1:
            (work / "logs" / FIXTURE.name).write_text(first)
        else:
            record = json.loads(first)
            for number in range(args.files):
                record["response"]["id"] = f"msg-{number}"
                (work / "logs" / f"request-{number:06d}.jsonl").write_text(json.dumps(record) + "\n")
        rounds = [one_round(checkouts, work) for _ in range(max(args.repeat, 1))]
    line: dict = {"rounds": len(rounds), "files": max(args.files, 1)}
    for key in rounds[0]:
        line[f"{key}_wall_s"] = round(statistics.median(r[key][0] for r in rounds), 2)
        line[f"{key}_cpu_s"] = round(statistics.median(r[key][1] for r in rounds), 2)
    if args.against:
        for kind in ("run", "rerun"):
            for unit in ("wall", "cpu"):
                line[f"{kind}_{unit}_ratio_to_against"] = round(line[f"{kind}_{unit}_s"] / line[f"against_{kind}_{unit}_s"], 2)
    line["each_round"] = [{k: [round(w, 2), round(c, 2)] for k, (w, c) in r.items()} for r in rounds]
    print(json.dumps(line))


if __name__ == "__main__":
    main()
