"""Many small files against one file of the same records: ``python bench/many_files.py --files 20000``.

Writes ``--files`` records (``generate.py``'s mixed formats) once as one JSONL file and once as one file
per record (``--per-file`` records each) in folders of 500, stages each folder into a fresh warehouse
(``ingest.stage_logs``, the staging step of ``cachemeter run``), and prints one JSON line: seconds for the
one file, seconds for the many files, their ratio (the target is at most 3), and the rows each staged
(which must be equal). Not run in CI; ``tests/sql/test_many_small_files.py`` checks the correctness.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import generate  # noqa: E402

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse  # noqa: E402

LATEST = datetime(2030, 1, 1, tzinfo=timezone.utc)


def split(one: Path, many: Path, per_file: int, per_folder: int = 500) -> int:
    """Write the lines of ``one`` into files of ``per_file`` lines under ``many``; returns the file count."""
    lines = one.read_text().splitlines(keepends=True)
    count = 0
    for start in range(0, len(lines), per_file):
        folder = many / f"h{count // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"req-{count:06d}.jsonl").write_text("".join(lines[start:start + per_file]))
        count += 1
    return count


def staged_seconds(logs: Path, db: Path) -> tuple[float, int, int]:
    """Wall seconds of staging ``logs`` into a fresh warehouse ``db``; with its usage and quarantine rows."""
    conn = warehouse.connect(db)
    started = time.perf_counter()
    ingest.stage_logs(conn, logs, latest=LATEST)
    seconds = time.perf_counter() - started
    usage, quarantined = conn.execute("select (select count(*) from core.usage), (select count(*) from core.quarantine)").fetchall()[0]
    conn.close()
    return seconds, usage, quarantined


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000, help="small files (records = files x per-file)")
    parser.add_argument("--per-file", type=int, default=1, help="records per small file")
    parser.add_argument("--workdir", type=Path, default=None, help="kept when given, else a temporary folder")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="many-files-"))
    try:
        (one,) = generate.generate(args.files * args.per_file, 1, work / "one", seed=3)
        count = split(one, work / "many", args.per_file)
        one_s, one_rows, one_q = staged_seconds(work / "one", work / "one.duckdb")
        many_s, many_rows, many_q = staged_seconds(work / "many", work / "many.duckdb")
        print(json.dumps({"records": args.files * args.per_file, "files": count, "one_file_seconds": round(one_s, 3),
                          "many_files_seconds": round(many_s, 3), "ratio": round(many_s / one_s, 2),
                          "one_file_rows": [one_rows, one_q], "many_files_rows": [many_rows, many_q]}))
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
