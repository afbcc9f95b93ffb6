"""The one partitioning of cachemeter: UTC days.

Starts at ``CACHEMETER_PARTITIONS_START`` (default 2020-01-01); ``end_offset=1`` makes today a
partition too, so a run can include the current (incomplete) day on request. The nightly schedule
targets the previous, complete day.
"""

from datetime import timedelta

import dagster as dg
import duckdb

from pipelines.lib import options

PARTITIONS_START = str(options.env_value("partitions_start"))

daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC", end_offset=1)


def window_params(context: dg.AssetExecutionContext) -> dict:
    """``{"start": date, "end": date}`` of the run's partition window, half-open, UTC days.

    Works for one partition and for a single-run range of partitions alike.
    """
    window = context.partition_time_window
    return {"start": window.start.date(), "end": window.end.date()}


def window_label(params: dict) -> str:
    """``"2026-11-18 .. 2026-11-27"``: the UTC days of a window, both ends included."""
    return f"{params['start']} .. {params['end'] - timedelta(days=1)}"


PART_ROWS = 1_000_000  # usage rows of the consecutive days one part of a window holds (a larger day: alone)


def window_parts(conn: duckdb.DuckDBPyConnection, params: dict, by_ids: bool = False) -> list[dict]:
    """``params`` once per part of its window ``[start, end)``: runs of consecutive UTC days holding at
    most ``PART_ROWS`` ``core.usage`` rows together (a day with more is a part alone), oldest first; the
    same parameters with the part's ``start`` and ``end``. A window without usage rows is one part.
    With ``by_ids`` (for a statement that takes ``$bucket`` and ``$buckets`` and keeps the rows whose
    ``hash(request_id) % $buckets = $bucket``), a day with more than ``PART_ROWS`` rows is cut further into
    ``ceil(rows / PART_ROWS)`` buckets of its request ids; every part carries ``bucket`` and ``buckets``
    (0 and 1 when not cut).

    A statement that joins the window's usage and cost rows on ``(request_id, day)`` holds a hash table
    of the window's rows; part by part it holds one part's. Measured at 8M requests over four days
    (``bench/README.md``, peak memory): the three checks that join them peaked at 1.26-1.39 GB of RSS
    over the window (DuckDB at its 1 GB limit plus 0.3 GB it does not count) and 1.05 GB day by day,
    in 8.6 s against 9.5-10.5 s. Small days stay together, so a long rebuild of small days is not a
    statement per day; a large day's buckets keep each hash table to about a million rows whatever the
    day's size (the peak of a run no longer grows with its largest day).
    """
    rows = dict(conn.execute("select day, count(*) from core.usage where day >= $start and day < $end group by day",
                             {"start": params["start"], "end": params["end"]}).fetchall())
    parts, first, held, day = [], params["start"], 0, params["start"]
    while day < params["end"]:
        if day > first and held + rows.get(day, 0) > PART_ROWS:
            parts.append({**params, "start": first, "end": day})
            first, held = day, 0
        held += rows.get(day, 0)
        day += timedelta(days=1)
    parts.append({**params, "start": first, "end": params["end"]})
    if not by_ids:
        return parts
    cut = []
    for part in parts:
        held = sum(n for d, n in rows.items() if part["start"] <= d < part["end"])
        buckets = max(1, -(-held // PART_ROWS))
        cut += [{**part, "bucket": bucket, "buckets": buckets} for bucket in range(buckets)]
    return cut


def whole(params: dict) -> dict:
    """``params`` as one uncut part: ``bucket`` 0 of 1 unless given (a statement that takes ``$bucket`` run whole)."""
    return {"bucket": 0, "buckets": 1, **params}


def id_buckets(conn: duckdb.DuckDBPyConnection, params: dict) -> list[dict]:
    """``params`` once per bucket of the window's ``request_id`` values: the same parameters with
    ``bucket`` (0-based) and ``buckets``, ``ceil(rows / BUCKET_ROWS)`` of them (at least 1), where
    ``rows`` counts the window's ``core.usage`` rows. A row is in bucket ``hash(request_id) % buckets``
    (the SQL's test; cast the parameters to UBIGINT there: untyped, the modulo took 10.5 s against
    0.7 s over 20M ids), so every copy of an id falls in the same bucket.

    A predicate over every id of the window at once (``sql/checks/usage__duplicate_request_ids.sql``:
    a hash aggregate and a semi-join of the window's ids) holds them all; bucket by bucket, one
    bucket's. Measured on 20M ids over four days (``bench/README.md``, peak memory): 1.43 GB of RSS
    and 8.0 s in one statement, 0.94 GB and 5.1 s in four buckets.
    """
    rows = conn.execute("select count(*) from core.usage where day >= $start and day < $end",
                        {"start": params["start"], "end": params["end"]}).fetchone()[0]
    buckets = max(1, -(-rows // BUCKET_ROWS))
    return [{**params, "bucket": bucket, "buckets": buckets} for bucket in range(buckets)]


BUCKET_ROWS = 5_000_000  # request ids of the window one bucket holds (id_buckets)


def clear_days_before_start(conn) -> str | None:
    """Drop the pending days before ``PARTITIONS_START`` (raised after they were staged) and say so: Dagster builds no
    partition before it, so they stayed pending for ever and every run that rebuilt them stopped on its invariant (a
    break test); their tables keep what an earlier run built. Returns the warning, or None when there were none. Both
    staging (every run, the CLI's and the nightly automation's) and the CLI after ``--all-days`` call it."""
    from pipelines.lib.sql import statement

    days = [day for (day,) in conn.execute(statement("core/pending_days__before_partitions"),
                                           {"start": PARTITIONS_START}).fetchall()]
    if not days:
        return None
    conn.execute(statement("core/pending_days__delete_before_partitions"), {"start": PARTITIONS_START})
    return (f"{len(days)} staged UTC day(s) before CACHEMETER_PARTITIONS_START={PARTITIONS_START} ({days[0]} .. "
            f"{days[-1]}) are not rebuilt: Dagster builds no partition before it, so their tables keep what an earlier "
            "run built (lower CACHEMETER_PARTITIONS_START to rebuild them)")
