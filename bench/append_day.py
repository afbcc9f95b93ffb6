"""Benchmark a night that appends one day to a log file of many days: ``python bench/append_day.py --days-dir DIR
--workdir DIR [--against CHECKOUT]``, one JSON line.

``--days-dir`` holds one JSONL file per UTC day (``bench/generate.py --requests N --days D --out DIR``). The first
``D - 1`` files are written as one ``app.jsonl``, ``cachemeter run`` stages and builds it, then the last day is appended
to the same file and ``cachemeter run`` again: the figure is that second run (wall and CPU seconds of the child), which
should rebuild only the appended day (``sql/ingest/pending_days__insert_batch.sql``) and read only its lines
(``pipelines/ingest/appends.py``), against a run of the last day alone into a new warehouse (``append_to_alone``). With ``--against`` the same is
measured with another checkout's code (its ``.venv/bin/python -m pipelines.cli``, run in that folder) right after,
for a ratio on the same machine. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed_run(checkout: Path, logs: Path, db: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``cachemeter run --logs logs --db db`` with ``checkout``'s code; raises SystemExit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-m", "pipelines.cli", "run", "--logs", str(logs),
                           "--db", str(db)], cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"cachemeter run failed ({checkout}):\n{done.stderr[-3000:]}")
    return round(wall, 2), round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2)


def measure(checkout: Path, days: list[Path], work: Path) -> dict:
    """The first run over all days but the last in one file, then the run after the last day is appended to it."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    target = work / "logs" / "app.jsonl"
    with open(target, "wb") as out:
        for day in days[:-1]:
            out.write(day.read_bytes())
    first = timed_run(checkout, work / "logs", work / "w.duckdb")
    with open(target, "ab") as out:
        out.write(days[-1].read_bytes())
    after = timed_run(checkout, work / "logs", work / "w.duckdb")
    alone = work / "alone"  # the last day alone, in a new warehouse: what the appended night should cost
    alone.mkdir()
    shutil.copyfile(days[-1], alone / "app.jsonl")
    day_alone = timed_run(checkout, alone, work / "alone.duckdb")
    return {"first_run": first, "after_append": after, "day_alone": day_alone,
            "append_to_alone": round(after[0] / day_alone[0], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days-dir", type=Path, required=True, help="one JSONL file per day (bench/generate.py)")
    parser.add_argument("--workdir", type=Path, required=True, help="scratch folder (its contents are replaced)")
    parser.add_argument("--against", type=Path, help="another checkout to measure the same way")
    args = parser.parse_args()
    days = sorted(args.days_dir.glob("*.jsonl"))
    if len(days) < 2:
        raise SystemExit(f"{args.days_dir} holds {len(days)} JSONL file(s): give one per day, at least two")
    result = {"days": len(days), "this": measure(REPO, days, args.workdir / "this")}
    if args.against:
        result["against"] = measure(args.against.resolve(), days, args.workdir / "against")
        result["ratio_wall"] = round(result["this"]["after_append"][0] / result["against"]["after_append"][0], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
