"""Simulate what a day of N requests costs split into (source shard x UTC day) units: ``python bench/scale_plan.py``.

Arithmetic on measured figures, nothing is run: every input is a measurement on this 2-core machine
(the defaults, with where each comes from) or a price you pass. For each daily volume it prints, as one
JSON line, how many source shards keep a shard-day within the largest day measured end to end
(``--shard-requests``, 5M: 54 s, 1.58 GB peak RSS), the machine time of a night (every shard-day
staged and built, each on one 2-core machine, scaled linearly from the measured rows per second; a
DuckLake run costs ``--lake-factor`` times the DuckDB file's), how long the night takes on ``--machines``
machines, the log, lake and Parquet volumes kept (``--retention-days``), and what that costs at the
prices given (``--machine-usd-per-hour``, ``--storage-usd-per-gb-month``: list prices you look up;
none is measured here).
"""

from __future__ import annotations

import argparse
import json
import math


def plan(requests_per_day: int, args: argparse.Namespace) -> dict:
    """The split and cost of one volume; see the module docstring for the inputs."""
    shards = math.ceil(requests_per_day / args.shard_requests)
    shard_day = requests_per_day / shards
    run_seconds = shard_day / args.rows_per_second * args.lake_factor + args.fixed_seconds
    machine_hours = shards * run_seconds / 3600
    machines = min(args.machines, shards)
    night_hours = math.ceil(shards / machines) * run_seconds / 3600
    lake_gb = requests_per_day * args.lake_bytes_per_request * args.retention_days / 1e9
    logs_gb_per_day = requests_per_day * args.log_bytes_per_request / 1e9
    return {
        "requests_per_day": requests_per_day, "source_shards": shards, "requests_per_shard_day": round(shard_day),
        "run_seconds_per_shard_day": round(run_seconds, 1), "machine_hours_per_night": round(machine_hours, 2),
        "machines": machines, "night_hours": round(night_hours, 2),
        "logs_gb_per_day": round(logs_gb_per_day, 1), "lake_gb_kept": round(lake_gb, 1),
        "compute_usd_per_month": round(machine_hours * 30 * args.machine_usd_per_hour, 2),
        "lake_storage_usd_per_month": round(lake_gb * args.storage_usd_per_gb_month, 2),
        "peak_rss_gb_per_machine": args.shard_rss_gb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--volumes", type=int, nargs="+", default=[100_000_000, 1_000_000_000])
    # bench/README.md, `bench/run.py --requests 5000000 --repeat 3` (median 54.26 s, 1.58 GB)
    parser.add_argument("--rows-per-second", type=float, default=92_144)
    parser.add_argument("--shard-requests", type=int, default=5_000_000)
    parser.add_argument("--shard-rss-gb", type=float, default=1.58)
    # a run's fixed cost beyond its rows (the one-line run of `bench/run.py --floor`: 9.9-12.1 s)
    parser.add_argument("--fixed-seconds", type=float, default=0.0)
    # DuckLake (PostgreSQL catalog) fresh run / DuckDB file run of the same logs: docs/scaling.md
    parser.add_argument("--lake-factor", type=float, default=1.0)
    # generated mixed-format logs: 1.88 GB per 5M requests (bench/README.md)
    parser.add_argument("--log-bytes-per-request", type=float, default=376)
    # Parquet under the lake's data path per request (bench/parallel_days.py parquet_bytes / requests)
    parser.add_argument("--lake-bytes-per-request", type=float, default=78)
    parser.add_argument("--retention-days", type=int, default=400)
    parser.add_argument("--machines", type=int, default=1)
    parser.add_argument("--machine-usd-per-hour", type=float, default=0.0)
    parser.add_argument("--storage-usd-per-gb-month", type=float, default=0.0)
    args = parser.parse_args()
    for volume in args.volumes:
        print(json.dumps(plan(volume, args)))


if __name__ == "__main__":
    main()
