"""Build the pending UTC days of a DuckLake in several processes at once (``--parallel`` / ``CACHEMETER_PARALLEL``).

A range of pending days is rebuilt in two steps, with the same job and the same SQL as one serial run:

1. ``DAY_LOCAL_ASSETS`` (``jobs.py``: usage, costs, savings, cost reconciliation, routing what-if, TTFT),
   whose rows for a day read only that day: the range is cut into ``workers`` runs of consecutive days,
   each a ``cachemeter_daily`` run restricted to those assets, executed in its own process at once;
2. ``WINDOW_ASSETS`` (prefix-family baselines, the TTL replay that reads the day before, alerts and
   incidents) and the publish assets: one run over the whole range in the calling process, after every
   process of step 1 has committed, so every trailing baseline reads the days as a serial build does.

Only a DuckLake with a PostgreSQL catalog takes several writing processes: a DuckDB file (or a DuckDB
catalog file) admits one process, and an SQLite catalog refuses a second committer ("database is
locked"), so those build serially, as before. Two processes that commit to the same table at the same
moment are settled by DuckLake itself (``ducklake_max_retry_count`` / ``ducklake_retry_wait_ms`` /
``ducklake_retry_backoff``: the loser is re-committed when the changes do not conflict); a window rewrite
(delete then insert) that meets another process's rewrite of the same table is a logical conflict DuckLake
aborts, and the step is run again by Dagster (``defs/resources.warehouse_connection``: ``RetryRequested``).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import date, timedelta

from pipelines.lib import lake, options, parent_watch

RANGE_TAG = "cachemeter/range_key"  # the range a run of the parallel build belongs to (its chunk runs share it)


def workers_for(target: str) -> int:
    """Processes that build days at once on ``target``: ``CACHEMETER_PARALLEL`` on a PostgreSQL-catalog
    DuckLake, else 1 (a DuckDB file, a DuckDB or SQLite catalog). Raises ``ValueError`` below 1."""
    wanted = int(options.env_value("parallel"))
    if wanted < 1:
        raise ValueError(f"setting CACHEMETER_PARALLEL: {wanted} is not a number of processes (1 or more)")
    shared = lake.is_lake(target) and lake.catalog_of(target).startswith("postgres:")
    return wanted if shared else 1


def chunks(first: date, last: date, parts: int) -> list[tuple[date, date]]:
    """``first .. last`` (inclusive) cut into at most ``parts`` runs of consecutive days, as even as can be,
    oldest first: ``chunks(1st, 5th, 2)`` is ``[(1st, 3rd), (4th, 5th)]``."""
    days = (last - first).days + 1
    parts = max(1, min(parts, days))
    out, start = [], first
    for index in range(parts):
        size = days // parts + (1 if index < days % parts else 0)
        out.append((start, start + timedelta(days=size - 1)))
        start += timedelta(days=size)
    return out


def build_day_local(ranges: list[tuple[date, date]], workers: int) -> int:
    """Build ``DAY_LOCAL_ASSETS`` of every range's days in ``workers`` processes; returns the steps that
    were run again after a DuckLake conflict. Raises ``PipelineError`` naming the days of a failed run.

    Processes are started with ``spawn`` (a fresh interpreter: no DuckDB instance or Dagster state is
    inherited from this one); they read the run's ``CACHEMETER_*`` settings from the environment.
    """
    parts = [part for first, last in ranges for part in chunks(first, last, workers)]
    with ProcessPoolExecutor(max_workers=min(workers, len(parts)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=parent_watch.exit_with_parent, initargs=(os.getpid(),)) as pool:
        futures = [pool.submit(_build_days, first, last) for first, last in parts]
        try:
            return sum(future.result() for future in futures)
        except BrokenProcessPool as exc:  # a worker killed (out of memory, kill -9): "an unexpected error" before
            from pipelines import runner

            span = f"{parts[0][0]} .. {parts[-1][1]}"
            raise runner.PipelineError(f"a process building days {span} died (killed, or out of memory?); the days stay "
                                       "pending: run again (lower --parallel if memory ran out)") from exc


def _build_days(first: date, last: date) -> int:
    """In a worker process: one ``cachemeter_daily`` run of ``DAY_LOCAL_ASSETS`` over ``first .. last``."""
    import dagster as dg

    from pipelines import runner
    from pipelines.definitions import defs as load_defs
    from pipelines.defs.nightly.jobs import DAY_LOCAL_ASSETS, daily_job, range_tags

    from pipelines.lib import warehouse

    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()
    # the lake stays attached for the whole run, as in the calling process (``warehouse.held_for_run``): each
    # asset's connection reuses this instance instead of attaching the catalog again
    with warehouse.connect(os.environ["CACHEMETER_DB"]):
        return runner._execute(load_defs(), daily_job.name, instance, range_tags(first, last),
                               f"days {first} .. {last}", DAY_LOCAL_ASSETS)


def run_requests(ranges: list[tuple[date, date, int, object]], workers: int, ingest_run: str, trigger: str,
                 succeeded: Callable[[str], int]) -> list:
    """The Dagster runs that build ``ranges`` in parallel (``pending_days_sensor`` on a PostgreSQL lake).

    Per range: one ``cachemeter_daily`` run of ``DAY_LOCAL_ASSETS`` per chunk of days (``chunks``), all
    requested at once (run keys make a repeated request a no-op), and, once ``succeeded(range_key)``
    counts every chunk run of the range as successful, the run of ``WINDOW_ASSETS`` and the publish
    assets over the whole range. How many of these run at once is the instance's configuration (the run
    queue's ``cachemeter/warehouse`` tag limit and the ``duckdb`` pool, docs/scaling.md), and where each
    runs is its run launcher's (a process, a Kubernetes job, a Celery worker).
    """
    import dagster as dg

    from pipelines.defs.nightly.jobs import DAY_LOCAL_ASSETS, PUBLISH_ASSETS, TRIGGER, WINDOW_ASSETS, daily_job, range_tags

    def keys(assets):
        return [dg.AssetKey(key) for key in assets]

    requests = []
    for first, last, days, staged_at in ranges:
        range_key = f"{first}..{last}@{staged_at.isoformat()}#{ingest_run}"
        tags = {"cachemeter/pending_days": str(days), TRIGGER: trigger, RANGE_TAG: range_key}
        parts = chunks(first, last, workers)
        requests += [dg.RunRequest(job_name=daily_job.name, asset_selection=keys(DAY_LOCAL_ASSETS),
                                   tags={**range_tags(a, b), **tags}, run_key=f"{range_key}:days {a}..{b}")
                     for a, b in parts]
        if succeeded(range_key) >= len(parts):
            requests.append(dg.RunRequest(job_name=daily_job.name, asset_selection=keys(WINDOW_ASSETS + PUBLISH_ASSETS),
                                          tags={**range_tags(first, last), **tags, RANGE_TAG: f"{range_key}:window"},
                                          run_key=f"{range_key}:window"))
    return requests
