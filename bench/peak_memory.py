"""Where a run's memory peaks: ``python bench/peak_memory.py --logs DIR [--db FILE] [-- extra cachemeter run args]``.

Runs ``cachemeter run --logs DIR --db FILE`` as a child, samples its resident set (``VmRSS`` of
``/proc/<pid>/status``, kB) every ``--every`` seconds and, each time it rises at least ``--step`` kB above the
highest sample so far, records the main thread's stack (``py-spy dump``: a short pause of the child) reduced to
its frames in ``pipelines/`` (the asset, the check or the SQL file's caller). Prints one JSON line: the child's
peak (``ru_maxrss``, kB), its exit code, wall seconds, and the new highs in order (seconds since start, kB,
frames), so the last lines name what set the peak. Needs ``py-spy`` (``pip install py-spy``) and Linux.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_kb(pid: int) -> int | None:
    """The process's current resident set in kB, or None once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def our_frames(pid: int, py_spy: str) -> list[str]:
    """The main thread's frames that lie in ``pipelines/``, innermost first (empty if the dump failed)."""
    dump = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30).stdout
    main = dump.split("\nThread ")[1] if "\nThread " in dump else dump
    return [line.strip() for line in main.splitlines() if "pipelines/" in line][:6]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", required=True, type=Path)
    parser.add_argument("--db", type=Path, default=Path("bench-work/peak.duckdb"))
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--step", type=int, default=20_000, help="kB above the highest sample that records a stack")
    parser.add_argument("rest", nargs="*", help="further arguments of cachemeter run (after --)")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if args.db.exists():
        args.db.unlink()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pipelines.cli", "run", "--logs", str(args.logs), "--db", str(args.db), *args.rest]
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    highs, top = [], 0
    while child.poll() is None:
        kb = rss_kb(child.pid)
        if kb is not None and kb >= top + args.step:
            top = kb
            highs.append({"s": round(time.perf_counter() - start, 1), "rss_kb": kb, "frames": our_frames(child.pid, py_spy)})
        time.sleep(args.every)
    stderr = child.stderr.read().decode(errors="replace")
    print(json.dumps({"exit_code": child.returncode, "wall_s": round(time.perf_counter() - start, 1),
                      "peak_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                      "highs": highs, "stderr_tail": stderr[-500:] if child.returncode else ""}))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
