"""The routing mart's replays of one day, two checkouts side by side: ``python bench/routing_mart.py --warehouse W
--against CHECKOUT [--rounds R]``, one JSON line.

``W`` is a warehouse a run built (``bench/run.py`` leaves ``w-<requests>-1.duckdb`` in its workdir); each round runs,
in a child process of each checkout in turn (its own ``pipelines`` package, this machine's Python), the mart's six
replays of W's first day exactly as ``routing_mart.refresh`` feeds them (``routing_inputs.usage_request_batches``, then
``routing_mart.day_rows``), and reports wall and CPU seconds of that call alone, their medians, the ratio this / other,
and whether the two checkouts' rows are equal. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
import duckdb
from datetime import timedelta
from pipelines.lib.whatif import routing_inputs, routing_mart
conn = duckdb.connect(sys.argv[1], read_only=True)
day = conn.execute("select min(day) from core.usage").fetchone()[0]
after = day + timedelta(days=1)
counts = routing_inputs.family_counts(conn, day, after)
start, cpu = time.perf_counter(), time.process_time()
rows = routing_mart.day_rows(day, routing_inputs.usage_request_batches(conn, day, after, sum(counts.values())), counts)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "rows": [{k: str(v) for k, v in r.items()} for r in rows]}))
"""


def once(checkout: Path, warehouse: Path) -> dict:
    """One replay of the day by ``checkout``'s code: wall and CPU seconds and the mart's rows (as text)."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(warehouse)], cwd=checkout, capture_output=True, text=True,
                          env={"PYTHONPATH": str(checkout)})
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--against", type=Path, required=True, help="another checkout (its pipelines/ is imported)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    this, other = [], []
    for _ in range(args.rounds):  # alternating, so a slow spell hits both
        this.append(once(REPO, args.warehouse))
        other.append(once(args.against.resolve(), args.warehouse))
    line = {"rounds": args.rounds}
    for name, runs in (("this", this), ("other", other)):
        line[f"{name}_wall_s"] = round(statistics.median(r["wall"] for r in runs), 3)
        line[f"{name}_cpu_s"] = round(statistics.median(r["cpu"] for r in runs), 3)
        line[f"{name}_wall_each"] = [round(r["wall"], 3) for r in runs]
    line["wall_ratio"] = round(line["this_wall_s"] / line["other_wall_s"], 3)
    line["cpu_ratio"] = round(line["this_cpu_s"] / line["other_cpu_s"], 3)
    line["rows_equal"] = all(r["rows"] == this[0]["rows"] for r in this + other)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
