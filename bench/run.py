"""Benchmark: ``python bench/run.py --requests N [--days D] [--workdir DIR] [--repeat R]``, one JSON line per measurement.

Measures, side by side in one process tree so machine noise cancels in the ratios:

* ``cachemeter run`` end to end (a subprocess; wall seconds and its peak RSS);
* DuckDB alone parsing the same files, forcing every line to be parsed
  (``count(*), sum(json_array_length(json_keys(json)))`` over ``read_json(..., records=false)``);
* a per-row peer: genai-prices ``extract_usage`` + ``calc_price`` row by row (the way per-request
  cost trackers work), timed on a sample and extrapolated to all rows.

With ``--repeat R`` the parse, the run and the peer alternate R times and the line reports their
medians (and every run): on this shared machine one measurement moves by a third between runs.

With ``--history-days H`` it measures instead what a nightly run costs on top of history: the wall
seconds of ``cachemeter run`` for one new day (``--requests`` of them) added to a warehouse that
already holds H earlier days of the same size, against the same day run alone on an empty warehouse
(target ratio at most 1.2: the cost grows with the new day, not with history).

With ``--bodies`` the logs carry the logged request bodies (``generate.py --bodies``, about 22 KB a
record) and the line reports the body path the same way: wall seconds, the ratio to DuckDB's bare
parse of the same files (measured side by side, alternating), rows per second, the peer and peak RSS.
Every line also gives the CPU seconds of the run (its process tree) and of the bare parse, and their ratio.

With ``--stage`` it measures staging alone (``stage_seconds``: ``stage_logs`` of the logs into a fresh
warehouse, fast lane, general normaliser for what it defers, and publishing to ``core.usage``), wall and
CPU seconds, against the bare parse; ``--no-fast-lane`` sends every record through the general normaliser.

With ``--floor`` it measures what no run of this design can avoid (``floor_seconds``: the fast lane
normalising the logs, one write of their rows, and a run on one line) against the bare parse.

Not part of the test run (a smoke test covers the generator and harness on a tiny input).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate  # noqa: E402

PEER_SAMPLE = 5_000


def bare_parse_seconds(logs: Path) -> float:
    """Wall seconds for DuckDB to parse every line of every file (the floor for any ingest)."""
    start = time.perf_counter()
    with duckdb.connect() as conn:
        conn.execute(f"select count(*), sum(json_array_length(json_keys(json))) "
                     f"from read_json('{logs}/*.jsonl*', format = 'newline_delimited', records = false)").fetchall()
    return time.perf_counter() - start


def pipeline_seconds(logs: Path, db: Path, *extra: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes, of every child so far) of ``cachemeter run`` on ``logs``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "run", "--logs", str(logs), "--db", str(db), *extra],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    if done.returncode != 0:
        raise SystemExit(f"cachemeter run failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every waited-for child so far (a ``cachemeter run`` and its workers)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def peer_rows_per_second(logs: Path) -> float:
    """Rows per second of genai-prices extract_usage + calc_price, row by row, on a sample."""
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    flavours = {"openai": "openai", "anthropic": "anthropic", "gemini": "google", "bedrock": "aws"}
    sample = []
    for path in sorted(logs.glob("*.jsonl")):
        with path.open() as handle:
            for line in handle:
                sample.append(line)
                if len(sample) >= PEER_SAMPLE:
                    break
        if len(sample) >= PEER_SAMPLE:
            break
    start = time.perf_counter()
    for line in sample:
        record = json.loads(line)
        provider = flavours[record["provider"]]
        body = record["response"]
        try:
            flavour = "responses" if body.get("object") == "response" else "default"
            extracted = snapshot.extract_usage(body, provider_id=provider, api_flavor=flavour)
            extracted.calc_price(model=snapshot.find_provider_model(record["model"], None, provider, None)[1],
                                 genai_request_timestamp=datetime.fromisoformat(record["ts"].replace("Z", "+00:00")))
        except Exception:  # the peer cannot price every row; its time still counts
            pass
    return len(sample) / (time.perf_counter() - start)


def incremental(requests: int, history_days: int, workdir: Path, repeat: int = 1) -> dict:
    """Seconds of one new day on top of ``history_days`` loaded days vs the same day alone (medians of ``repeat``
    rounds, each timing the day alone then the day on a fresh copy of the loaded history, so they alternate)."""
    import shutil

    logs = workdir / f"logs-{requests}x{history_days + 1}"
    if not logs.exists():
        generate.generate(requests * (history_days + 1), history_days + 1, logs)
    files = sorted(logs.iterdir())
    new_day = files[-1]
    alone, history = workdir / "alone", workdir / "history"
    for folder in (alone, history):
        if folder.exists():
            for stale in folder.iterdir():
                stale.unlink()
        folder.mkdir(parents=True, exist_ok=True)
    (alone / new_day.name).symlink_to(new_day.resolve())
    for stale in workdir.glob("w-inc-*"):
        stale.unlink()
    loaded = workdir / "w-inc-loaded.duckdb"
    # load the history (untimed): all days but the last in one run, then the last day as a night's run, so the
    # warehouse at rest holds what a night leaves: its snapshot, and the one before it (the snapshot's spare)
    for night in ([files[:-2]] if len(files) > 2 else []) + [[files[-2]]]:
        for path in night:
            (history / path.name).symlink_to(path.resolve())
        pipeline_seconds(history, loaded, "--follow-symlinks")
    (history / new_day.name).symlink_to(new_day.resolve())
    alones, on_tops, rss = [], [], 0
    for _ in range(max(repeat, 1)):
        for stale in [*workdir.glob("w-inc-alone*"), *workdir.glob("w-inc-history*")]:
            stale.unlink()
        alones.append(pipeline_seconds(alone, workdir / "w-inc-alone.duckdb", "--follow-symlinks")[0])
        for kept in workdir.glob("w-inc-loaded.*"):  # the warehouse, its snapshot and the snapshot's spare
            shutil.copyfile(kept, workdir / kept.name.replace("w-inc-loaded", "w-inc-history"))
        os.sync()  # the copies written back before the timed run, as a warehouse at rest is (else the run waits on it)
        seconds, rss = pipeline_seconds(history, workdir / "w-inc-history.duckdb", "--follow-symlinks")
        on_tops.append(seconds)
    alone_seconds, on_top_seconds = statistics.median(alones), statistics.median(on_tops)
    line = {"requests_per_day": requests, "history_days": history_days, "new_day_alone_seconds": round(alone_seconds, 2),
            "new_day_on_history_seconds": round(on_top_seconds, 2),
            "ratio_to_alone": round(on_top_seconds / alone_seconds, 2), "peak_rss_bytes": rss}
    if repeat > 1:
        line.update(runs=len(alones), alone_seconds_each=[round(a, 2) for a in alones],
                    on_history_seconds_each=[round(t, 2) for t in on_tops])
    return line


def floor_seconds(logs: Path, workdir: Path) -> dict:
    """Wall seconds of the work no design of this pipeline can skip, measured piece by piece.

    ``lane_seconds``: the fast lane (``sql/ingest/fast_items__read_jsonl.sql``) normalising every file
    into a scratch table, i.e. reading each record's fields and checking them, nothing stored;
    ``write_seconds``: writing those rows once to a table of a warehouse file (what storing a day costs);
    ``fixed_seconds``: a whole ``cachemeter run`` on the first line of the logs alone (start-up,
    Dagster's runs, checks and report on almost no data). Their sum, ``floor_seconds``, is what a run of
    these logs costs before pricing, checks, marts and alerts touch the day's rows.
    """
    from pipelines.ingest import stage as ingest
    from pipelines.lib import warehouse
    from pipelines.lib.sql import statement

    db = workdir / "floor.duckdb"
    for stale in workdir.glob("floor*.duckdb*"):
        stale.unlink()
    params = {name: None for name in ingest.FAST_LANE_PARAMS} | {
        "deployment_names": [], "deployment_models": [], "earliest": "2000-01-01", "latest": "2100-01-01"}
    lane = write = 0.0
    with warehouse.prepare(duckdb.connect(str(db))) as conn:
        for index, path in enumerate(sorted(logs.glob("*.jsonl*"))):
            start = time.perf_counter()
            conn.execute(statement("ingest/fast_items__read_jsonl"), {**params, "path": str(path)})
            lane += time.perf_counter() - start
            start = time.perf_counter()
            conn.execute(f"create table main.written_{index} as select * from fast_items")
            write += time.perf_counter() - start
    one = workdir / "floor-one-line"
    one.mkdir(exist_ok=True)
    first = sorted(logs.glob("*.jsonl"))[0]
    with first.open() as handle:
        (one / first.name).write_text(handle.readline())
    fixed, _ = pipeline_seconds(one, workdir / "floor-one-line.duckdb")
    return {"lane_seconds": lane, "write_seconds": write, "fixed_seconds": fixed, "floor_seconds": lane + write + fixed}


def stage_seconds(logs: Path, workdir: Path, fast_lane: bool = True) -> tuple[float, float]:
    """Wall and CPU seconds (this process, DuckDB's threads included) of ``stage_logs`` of ``logs`` into a fresh
    warehouse file: every file read, normalised and published to ``core.usage`` / ``core.quarantine``."""
    from datetime import date

    from pipelines.ingest import stage
    from pipelines.lib import warehouse

    db = workdir / "w-staging.duckdb"  # not stage.duckdb: a catalog named like the stage schema is ambiguous
    for stale in workdir.glob("w-staging.duckdb*"):
        stale.unlink()
    with warehouse.prepare(duckdb.connect(str(db))) as conn:
        start, cpu = time.perf_counter(), time.process_time()
        stage.stage_logs(conn, logs, earliest=date(2000, 1, 1), fast_lane=fast_lane)
        return time.perf_counter() - start, time.process_time() - cpu


def staging(requests: int, days: int, workdir: Path, repeat: int, fast_lane: bool) -> dict:
    """Medians of the bare parse and of staging (``stage_seconds``), alternating ``repeat`` times."""
    logs = workdir / f"logs-{requests}-{days}"
    if not logs.exists():
        generate.generate(requests, days, logs)
    parses, stages = [], []
    for _ in range(max(repeat, 1)):
        parses.append(bare_parse_seconds(logs))
        stages.append(stage_seconds(logs, workdir, fast_lane))
    parse = statistics.median(parses)
    wall, cpu = statistics.median(s[0] for s in stages), statistics.median(s[1] for s in stages)
    return {"requests": requests, "days": days, "fast_lane": fast_lane, "parse_seconds": round(parse, 2),
            "stage_seconds": round(wall, 2), "stage_cpu_seconds": round(cpu, 2), "stage_ratio_to_parse": round(wall / parse, 2),
            "runs": len(stages), "stage_seconds_each": [round(s[0], 2) for s in stages],
            "parse_seconds_each": [round(p, 2) for p in parses]}


def floor(requests: int, days: int, workdir: Path, repeat: int) -> dict:
    """Medians of the bare parse and of each of ``floor_seconds``' pieces (each its own median), alternating
    ``repeat`` times."""
    logs = workdir / f"logs-{requests}-{days}"
    if not logs.exists():
        generate.generate(requests, days, logs)
    parses, pieces = [], []
    for _ in range(max(repeat, 1)):
        parses.append(bare_parse_seconds(logs))
        pieces.append(floor_seconds(logs, workdir))
    parse = statistics.median(parses)
    line = {"requests": requests, "days": days, "parse_seconds": round(parse, 2)}
    for key in ("lane_seconds", "write_seconds", "fixed_seconds", "floor_seconds"):
        line[key] = round(statistics.median(p[key] for p in pieces), 3)
    line["floor_ratio_to_parse"] = round(line["floor_seconds"] / parse, 2)
    if repeat > 1:
        line.update(runs=len(parses), parse_seconds_each=[round(p, 2) for p in parses],
                    floor_seconds_each=[round(p["floor_seconds"], 2) for p in pieces])
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--history-days", type=int, default=0,
                        help="measure one new day on top of this many loaded days (see the module docstring)")
    parser.add_argument("--workdir", type=Path, default=Path("bench-work"))
    parser.add_argument("--repeat", type=int, default=1,
                        help="alternate the bare parse, the pipeline run and the peer this many times and report medians "
                             "(this shared machine varies by a third between runs)")
    parser.add_argument("--bodies", action="store_true",
                        help="logs with request bodies (generate.py --bodies): measures the prefix-fingerprint path")
    parser.add_argument("--floor", action="store_true",
                        help="measure instead the floor of a run: the fast lane, one write of the rows and a "
                             "one-line run, against the bare parse (see floor_seconds)")
    parser.add_argument("--stage", action="store_true",
                        help="measure instead staging alone (stage_logs into a fresh warehouse) against the bare parse")
    parser.add_argument("--no-fast-lane", action="store_true", help="with --stage: every record through the general normaliser")
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(staging(args.requests, args.days, args.workdir, args.repeat, not args.no_fast_lane)))
        return
    if args.floor:
        print(json.dumps(floor(args.requests, args.days, args.workdir, args.repeat)))
        return
    if args.history_days:
        print(json.dumps(incremental(args.requests, args.history_days, args.workdir, args.repeat)))
        return
    name = f"{'bodies-' if args.bodies else ''}{args.requests}-{args.days}"
    logs = args.workdir / f"logs-{name}"
    if not logs.exists():
        generate.generate(args.requests, args.days, logs, bodies=args.bodies)
    size = sum(p.stat().st_size for p in logs.iterdir())
    db = args.workdir / f"w-{name}.duckdb"
    parses, walls, peers, rss = [], [], [], 0
    parse_cpus, run_cpus = [], []
    for _ in range(max(args.repeat, 1)):  # parse, run and peer alternate, so a slow spell hits all three
        for stale in args.workdir.glob(f"w-{name}.duckdb*"):
            stale.unlink()
        cpu = time.process_time()  # DuckDB's threads included
        parses.append(bare_parse_seconds(logs))
        parse_cpus.append(time.process_time() - cpu)
        cpu = children_cpu_seconds()
        wall, rss = pipeline_seconds(logs, db)  # peak RSS of any run so far
        run_cpus.append(children_cpu_seconds() - cpu)
        walls.append(wall)
        peers.append(peer_rows_per_second(logs))
    parse, wall, peer = statistics.median(parses), statistics.median(walls), statistics.median(peers)
    ours = args.requests / wall
    line = {"requests": args.requests, "days": args.days, "bodies": args.bodies, "bytes": size, "wall_seconds": round(wall, 2),
            "parse_seconds": round(parse, 2), "ratio_to_parse": round(wall / parse, 2),
            "rows_per_second": round(ours), "peer_rows_per_second": round(peer),
            "speedup_vs_peer": round(ours / peer, 2), "peak_rss_bytes": rss,
            # CPU seconds (user + system): on a loaded machine the wall ratio mostly says how many runnable
            # threads each side had; the CPU ratio says how much work each did
            "cpu_seconds": round(statistics.median(run_cpus), 2), "parse_cpu_seconds": round(statistics.median(parse_cpus), 2),
            "cpu_ratio_to_parse": round(statistics.median(run_cpus) / statistics.median(parse_cpus), 2)
            if statistics.median(parse_cpus) > 0 else None}
    if args.repeat > 1:  # medians above; every run here
        line.update(runs=len(walls), wall_seconds_each=[round(w, 2) for w in walls],
                    parse_seconds_each=[round(p, 2) for p in parses],
                    peer_rows_per_second_each=[round(p) for p in peers])
    print(json.dumps(line))


if __name__ == "__main__":
    main()
