"""The fast lane statement's cost in instructions, this checkout against another (callgrind, one thread).

    .venv/bin/python bench/lane_instructions.py --against /path/to/other/checkout --lines 20000

Seconds on this shared 2-core machine move by a third between runs; instructions do not. Each checkout's
``sql/ingest/fast_items__read_jsonl.sql`` runs once over the same first ``--lines`` lines of a generated day
(``bench/generate.py``), in its own Python process under ``valgrind --tool=callgrind`` with DuckDB at one
thread, counting only inside DuckDB's query execution (``--toggle-collect=*CompletePendingQuery*``: the
warehouse's macros and the lane statement, not Python's start-up). Both use this checkout's DuckDB and
macros (``warehouse.prepare``), so the figure compares the two statements alone. Prints one JSON line:
instructions for each, the ratio this / other, and whether both gave the same ``fast_items``
(a hash of every row and column: false too where the two statements' columns differ). Needs Debian's valgrind; 20,000 lines take about a minute a checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (bench/generate.py beside this file)

# <sql file> <jsonl>: run the lane statement once; print a hash of fast_items
CHILD = r"""
import os, sys
sql, path = sys.argv[1:3]
sys.path.insert(0, os.environ["LANE_REPO"])
import duckdb
from pipelines.lib import warehouse
conn = warehouse.prepare(duckdb.connect())
conn.execute("set threads = 1")
text = open(sql).read()
params = dict(path=path, provider=None, model=None, tenant=None, app=None, default_ts=None,
              deployment_names=[], deployment_models=[], earliest="2000-01-01", latest="2100-01-01")
conn.execute(text, {k: v for k, v in params.items() if f"${k}" in text})
print(conn.execute("select count(*), count(*) filter (where accepted), bit_xor(hash(rowid, columns(*))) "
                   "from fast_items").fetchone())
"""


def rows(sql: Path, lines: Path) -> str:
    """The lane's fast_items hash line, from a native run: under valgrind the hashes of two statements whose native
    rows are equal differed (valgrind emulates the CPU, its floating point included), so rows are compared outside it."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(sql), str(lines)], capture_output=True, text=True,
                          env={**os.environ, "LANE_REPO": str(REPO)})
    if done.returncode != 0:
        raise SystemExit(f"the lane run failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip()


def instructions(sql: Path, lines: Path, out: Path) -> int:
    """Instructions inside DuckDB's query execution of one lane run under callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=*CompletePendingQuery*",
         f"--callgrind-out-file={out}", sys.executable, "-c", CHILD, str(sql), str(lines)],
        capture_output=True, text=True, env={**os.environ, "LANE_REPO": str(REPO)})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"the lane run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="another checkout of cachemeter")
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--workdir", type=Path, default=Path("bench-work/lane"))
    args = parser.parse_args()
    logs = args.workdir / f"logs-{args.lines}"
    if not logs.exists():
        generate.generate(args.lines, 1, logs)
    day = sorted(logs.glob("*.jsonl"))[0]
    with tempfile.TemporaryDirectory() as tmp:
        mine, theirs = REPO / "sql/ingest/fast_items__read_jsonl.sql", args.against / "sql/ingest/fast_items__read_jsonl.sql"
        this, other = instructions(mine, day, Path(tmp) / "this.out"), instructions(theirs, day, Path(tmp) / "other.out")
    print(json.dumps({"lines": args.lines, "this_instructions": this, "other_instructions": other,
                      "ratio": round(this / other, 3), "same_rows": rows(mine, day) == rows(theirs, day)}))


if __name__ == "__main__":
    main()
