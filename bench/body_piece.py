"""CPU per logged request body of the body path's per-record work, this checkout against another.

``body_chunks.fingerprint_piece`` (parse, render, hashes, divergence) runs in one process over the first
``--lines`` lines of a ``generate.py --bodies`` file, as the fast lane's lines (``cut`` false) and as
deferred lines whose bodies are cut (``--cut``), for this checkout and the one named by ``--against``,
alternating in fresh subprocesses; each prints CPU microseconds per line (process time), and the rows of
the two are compared (they must be equal: the compiled helpers and the Python definitions agree).

    .venv/bin/python bench/body_piece.py --logs bench-work/logs-b --against /path/to/other/checkout --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CHILD = """
import sys, time, json, hashlib
sys.path.insert(0, sys.argv[1])
from pipelines.ingest import body_chunks, fingerprints
lines = [line.rstrip("\\n") for _, line in zip(range(int(sys.argv[3])), open(sys.argv[2], encoding="utf-8"))]
cut = None if sys.argv[4] == "cut" else [False] * len(lines)
body_chunks.fingerprint_piece(lines[:200], None, None, cut and cut[:200])  # warm: imports, first allocations
started = time.process_time()
rows = body_chunks.fingerprint_piece(lines, None, None, cut).rows
spent = time.process_time() - started
print(json.dumps({"us_per_line": spent / len(lines) * 1e6, "compiled": getattr(fingerprints, "compiled", None) is not None,
                  "rows": hashlib.sha256(repr(rows).encode("utf-8", "surrogatepass")).hexdigest()}))
"""


def measure(checkout: Path, path: Path, lines: int, mode: str) -> dict:
    """One child run: CPU microseconds per line of ``fingerprint_piece`` in ``checkout`` and a hash of its rows."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(path), str(lines), mode],
                          capture_output=True, text=True, cwd=checkout, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, required=True, help="a folder or file written by generate.py --bodies")
    parser.add_argument("--against", type=Path, required=True, help="another checkout of the project")
    parser.add_argument("--lines", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cut", action="store_true", help="deferred lines (bodies cut for the normaliser)")
    args = parser.parse_args()
    path = args.logs if args.logs.is_file() else sorted(args.logs.rglob("*.jsonl"))[0]
    mode = "cut" if args.cut else "lane"
    runs: dict[str, list[dict]] = {"this": [], "against": []}
    for _ in range(args.rounds):
        runs["this"].append(measure(HERE, path, args.lines, mode))
        runs["against"].append(measure(args.against.resolve(), path, args.lines, mode))
    this = statistics.median(r["us_per_line"] for r in runs["this"])
    other = statistics.median(r["us_per_line"] for r in runs["against"])
    print(json.dumps({
        "lines": args.lines, "mode": mode, "rounds": args.rounds,
        "this_us_per_line": round(this, 1), "against_us_per_line": round(other, 1), "ratio": round(this / other, 3),
        "this_each": [round(r["us_per_line"], 1) for r in runs["this"]],
        "against_each": [round(r["us_per_line"], 1) for r in runs["against"]],
        "this_compiled": runs["this"][0]["compiled"], "against_compiled": runs["against"][0]["compiled"],
        "rows_equal": len({r["rows"] for r in runs["this"] + runs["against"]}) == 1,
    }))


if __name__ == "__main__":
    main()
