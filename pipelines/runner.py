"""Run cachemeter's assets in-process, the way the CLI does: stage logs, price, then every day present.

``run_pipeline`` sets the ``CACHEMETER_*`` variables, loads the code location's definitions and
materializes (1) the unpartitioned ingest and pricing assets, then (2) the daily assets over the
range of UTC days found in the staged logs, as one single-run backfill (assets read the whole
partition window). Runs are recorded in ``DAGSTER_HOME`` when it is set, else in an ephemeral instance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import dagster as dg

from pipelines.lib import expectations, progress, report, warehouse
from pipelines.lib.sql import statement

INGEST_KEYS = [["stage", "files"], ["core", "quarantine"], ["core", "prices"], ["core", "cache_minimums"]]
DAILY_KEYS = [["core", "usage"], ["core", "usage_costs"], ["marts", "daily_savings"], ["marts", "prefix_families"],
              ["marts", "cost_reconciliation"],
              ["marts", "cache_alerts"]]
PUBLISH_KEYS = [["publish", "warehouse_snapshot"], ["publish", "cache_report"]]


class PipelineError(RuntimeError):
    """A run that could not complete; the message says which step and why."""


@dataclass(frozen=True)
class RunResult:
    """What a run covered: the UTC days rebuilt (first, last; None when the logs held no usage)."""

    first_day: date | None
    last_day: date | None


def configure(logs: Path | None, db: Path, prices: Path | None, follow_symlinks: bool = False) -> None:
    """Point the definitions at a logs folder, warehouse file and price overrides (via environment)."""
    if logs is not None:
        os.environ["CACHEMETER_LOGS"] = str(Path(logs).resolve())
    os.environ["CACHEMETER_DB"] = str(Path(db).resolve())
    if prices is not None:
        os.environ["CACHEMETER_PRICES"] = str(Path(prices).resolve())
    else:
        os.environ.pop("CACHEMETER_PRICES", None)
    os.environ["CACHEMETER_FOLLOW_SYMLINKS"] = "1" if follow_symlinks else "0"


def run_pipeline(instance: dg.DagsterInstance | None = None, all_days: bool = False) -> RunResult:
    """Materialize ingest and pricing, then the UTC days whose data changed. Raises ``PipelineError``.

    The days rebuilt are those in ``stage.pending_days``: days touched by new, late or edited files
    (and the staged days after them whose baselines read them),
    every staged day when the price book changed, and days a run did not finish. A nightly run on top
    of a long history therefore costs what the new day costs. ``all_days`` rebuilds every staged day
    (after changing alert thresholds, for example).
    """
    from pipelines.definitions import defs as load_defs

    defs = load_defs()
    assets = list(defs.assets or [])
    resources = dict(defs.resources or {})
    if instance is None and os.environ.get("DAGSTER_HOME"):
        Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)  # Dagster requires it to exist
        instance = dg.DagsterInstance.get()
    instance = instance or dg.DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

    # seconds of imports and of bundling the report's JavaScript, overlapped with staging (in DuckDB)
    expectations.preload()
    report.preload()
    with warehouse.held_open(os.environ["CACHEMETER_DB"]) as conn:  # one open instance for every asset
        _materialize(assets, resources, INGEST_KEYS, instance, quiet, {}, "ingest and pricing")
        if all_days:
            conn.execute(statement("core/pending_days__insert_all"))
        first, last = conn.execute("select min(day), max(day) from stage.pending_days").fetchall()[0]
        if first is None:
            _materialize(assets, resources, PUBLISH_KEYS, instance, quiet, {}, "publishing the snapshot")
            return RunResult(None, None)
        tags = {"dagster/asset_partition_range_start": first.isoformat(),
                "dagster/asset_partition_range_end": last.isoformat()}
        days = (last - first).days + 1
        progress.report("build", 0, days, f"{first} .. {last}")
        _materialize(assets, resources, DAILY_KEYS, instance, quiet, tags, f"days {first} .. {last}")
        progress.report("build", days, days, f"{first} .. {last}")
        progress.report("publish", 0, 1, "snapshot and report")
        _materialize(assets, resources, PUBLISH_KEYS, instance, quiet, {}, "publishing the snapshot")
        progress.report("publish", 1, 1, "snapshot and report")
    return RunResult(first, last)


def _materialize(assets, resources, keys, instance, run_config, tags, what: str) -> None:
    selection = dg.AssetSelection.assets(*[dg.AssetKey(k) for k in keys])
    result = dg.materialize(assets, resources=resources, selection=selection, instance=instance,
                            run_config=run_config, tags=tags, raise_on_error=False)
    if not result.success:
        failures = [event for event in result.all_events if event.is_step_failure]
        detail = _root_cause(failures[0].step_failure_data.error) if failures else "see the Dagster logs"
        raise PipelineError(f"{what} failed: {detail}")


def _root_cause(error) -> str:
    """The message of the first non-Dagster error in a step failure's chain: cachemeter's own error
    (which names the file, line and fix) rather than the low-level exception it wraps."""
    while error.cls_name.startswith("Dagster") and getattr(error, "cause", None) is not None:
        error = error.cause
    return error.message.strip()
