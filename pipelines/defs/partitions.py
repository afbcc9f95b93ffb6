"""The one partitioning of cachemeter: UTC days.

Starts at ``CACHEMETER_PARTITIONS_START`` (default 2020-01-01); ``end_offset=1`` makes today a
partition too, so a run can include the current (incomplete) day on request. The nightly schedule
targets the previous, complete day.
"""

from datetime import timedelta

import dagster as dg

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
