"""Run cachemeter the way the nightly automation does, in-process: the same named jobs, the same ranges.

``run_pipeline`` executes ``cachemeter_ingest`` (stage logs, rebuild the price book, check built days),
then one ``cachemeter_daily`` run per range of pending UTC days (``sql/core/pending_days__ranges.sql``,
the file ``pending_days_sensor`` reads too), or ``cachemeter_publish`` when no day is pending. Runs are
recorded under those job names in ``DAGSTER_HOME`` when it is set (the UI lists them beside the
scheduled ones), else in an ephemeral instance. The warehouse is held for the whole run: a second run
waits up to ``wait_seconds`` for it, then stops with a one-line ``WarehouseBusyError``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import dagster as dg

from pipelines.defs.nightly.jobs import (CLI_TRIGGER, CODE_LOCATION, PUBLISH_ASSETS, WINDOW_ASSETS, daily_job,
                                          ingest_job, publish_job, range_tags)
from pipelines.defs.settings import DEFAULT_LOGS, CachemeterSettings
from pipelines.ingest import objectstore
from pipelines.lib import collector, dead_runs, interrupts, lake, progress, side_process, warehouse
from pipelines.lib.sql import statement


# the step that posts incident notices (marts/alert_deliveries), last of a daily run, after the snapshot
DELIVERY_STEP = "marts__alert_deliveries"


class PipelineError(RuntimeError):
    """A run that could not complete; the message says which step and why."""


class NoticesNotDeliveredError(PipelineError):
    """Every day was built and published, but the alert webhook did not take every notice."""

    def __init__(self, what: str, cause: str = "", built: bool = True) -> None:
        self.cause, self.result = cause, None  # result: the RunResult of the days built, when the run got that far
        # built False: no day needed building, the notices were earlier runs' ("publishing the snapshot: built and
        # published" named a step that had not failed, a break test)
        done = "built and published, but the" if built else "no day needed building; the"
        super().__init__(f"{what}: {done} incident notices were not all delivered"
                         f"{f' ({cause})' if cause else ''}; the next run posts the ones left "
                         "(marts.alert_deliveries lists each attempt: cachemeter sql --live; `cachemeter doctor` "
                         "checks the webhook's settings)")


@dataclass(frozen=True)
class RunResult:
    """What a run covered: the UTC days rebuilt (first, last; None when the logs held no usage)."""

    first_day: date | None
    last_day: date | None
    retried_steps: int = 0  # steps run again after a DuckLake write conflict (parallel builds; pipelines/parallel_days.py)
    ranges: tuple[tuple[date, date], ...] = ()  # the (first, last) UTC day of each range rebuilt, in order

    def rebuilt(self, day: date) -> bool:
        """Whether ``day`` was rebuilt: inside one of ``ranges`` (a late day and today are two ranges, not the days
        between them)."""
        return any(first <= day <= last for first, last in self.ranges)


def configure(logs: Path | str | None, db: Path | str, prices: Path | None, follow_symlinks: bool = False,
              data_path: str | None = None) -> None:
    """Point the definitions at a logs folder or bucket prefix (default: the bundled demo), warehouse and price overrides.

    ``db`` is a DuckDB file or a DuckLake target ``ducklake:<catalog>`` whose Parquet files go to
    ``data_path`` (``lib/lake.py``).

    The definitions read these as ``CACHEMETER_*`` environment variables (``defs/settings.py``), so a
    Dagster deployment configured by its environment runs exactly what the CLI runs. Raises ``ValueError`` for a local
    ``logs`` that is not a folder, and for a ``db`` a run must not write (``warehouse.refuse_foreign_file``, ...).
    """
    logs = DEFAULT_LOGS if logs is None else logs
    target = warehouse.resolved(db)
    if not lake.is_lake(target):
        warehouse.refuse_foreign_file(Path(target))
        warehouse.refuse_shared_snapshot(Path(target))  # before a run, never before a read
    if not objectstore.is_remote(logs) and not Path(logs).is_dir():  # before the warehouse file is created (a break
        # test: a mistyped --logs left an empty warehouse that answered every query with 0 and an empty report)
        from pipelines.ingest.discover import safe_name

        raise ValueError(f"logs folder {safe_name(str(logs))} does not exist or is not a folder: give --logs the folder "
                         "the usage logs are in")
    os.environ["CACHEMETER_LOGS"] = str(logs) if objectstore.is_remote(logs) else str(Path(logs).resolve())
    os.environ["CACHEMETER_DB"] = target
    if data_path:
        os.environ[lake.DATA_PATH_ENV] = data_path
    else:
        os.environ.pop(lake.DATA_PATH_ENV, None)
    if prices is not None:
        os.environ["CACHEMETER_PRICES"] = str(Path(prices).resolve())
    else:
        os.environ.pop("CACHEMETER_PRICES", None)
    os.environ["CACHEMETER_FOLLOW_SYMLINKS"] = "1" if follow_symlinks else "0"


def run_pipeline(instance: dg.DagsterInstance | None = None, all_days: bool = False,
                 wait_seconds: float = 0) -> RunResult:
    """Stage and price, then rebuild the pending UTC days; raises ``PipelineError`` or ``WarehouseBusyError``.

    The days rebuilt are those in ``stage.pending_days``: days touched by new, late or edited files
    (and the staged days after them whose baselines read them), every staged day when the price book
    changed, and days a run did not finish. A nightly run on top of a long history therefore costs what
    the new day costs. ``all_days`` rebuilds every staged day (after changing alert thresholds, for example).
    On a PostgreSQL-catalog DuckLake with ``CACHEMETER_PARALLEL`` > 1 the days are built by that many
    processes at once (``pipelines/parallel_days.py``), with the same results.
    """
    interrupts.hold()  # until Dagster's execution takes over the signals (lib/interrupts.py)
    try:
        return _run_pipeline(instance, all_days, wait_seconds)
    except interrupts.Interrupted as exc:  # came while they were held: nothing was staged or built
        raise PipelineError(str(exc)) from None
    finally:
        interrupts.release(raise_held=False)  # a run that failed before releasing them


def _run_pipeline(instance: dg.DagsterInstance | None, all_days: bool, wait_seconds: float) -> RunResult:
    from pipelines import parallel_days
    from pipelines.defs.nightly.sensors import pending_ranges
    from pipelines.definitions import defs as load_defs

    with collector.paused():  # the definitions and Dagster's instance: most of the objects a run ever holds
        defs = load_defs()
        if instance is None and os.environ.get("DAGSTER_HOME"):
            instance = instance_of_home(Path(os.environ["DAGSTER_HOME"]))
        instance = instance or dg.DagsterInstance.ephemeral()
    dependent_days = CachemeterSettings.from_env().dependent_days
    workers = parallel_days.workers_for(os.environ["CACHEMETER_DB"])

    # one open instance for every asset, and the lock that keeps a second run out
    with warehouse.held_for_run(os.environ["CACHEMETER_DB"], wait_seconds) as conn:
        released = dead_runs.release_dead_runs(instance)  # else a killed run's pool slot blocks this one forever
        if released:
            progress.warn(f"{len(released)} Dagster run(s) of a cachemeter run that died (killed, or the machine "
                          f"stopped) marked failed and their pool slots freed: {', '.join(r[:8] for r in released)}")
        interrupts.release()  # Dagster's execution handles them from here; raises Interrupted if one came
        _execute(defs, ingest_job.name, instance, {}, "ingest and pricing")
        if all_days:  # (staging and the price book recorded their pending days for readers; these are added here)
            conn.execute(statement("core/pending_days__insert_all"))
            warehouse.record_unbuilt_days(conn, os.environ["CACHEMETER_DB"])
        _clear_days_before_partitions(conn)
        ranges = pending_ranges(conn, dependent_days)
        if not ranges:  # nothing to validate (the side process's GX thread, if the CLI started one, is not waited for)
            try:
                _execute(defs, publish_job.name, instance, {}, "publishing the snapshot")
            except NoticesNotDeliveredError as exc:  # notices left by earlier nights: the summary first, then this
                failed = NoticesNotDeliveredError("alert delivery", exc.cause, built=False)
                failed.result = RunResult(None, None)
                raise failed from None
            return RunResult(None, None)
        # Great Expectations' process (seconds of importing), only when days are built (their checks validate them);
        # started already if staging read new files (the ingest asset), so its import overlaps staging
        side_process.preload()
        total = sum((last - first).days + 1 for first, last, _, _ in ranges)
        done, retried, selection = 0, 0, None
        if workers > 1:
            progress.report("build", 0, total, f"{ranges[0][0]} .. {ranges[-1][1]} in {workers} processes")
            retried = parallel_days.build_day_local([(first, last) for first, last, _, _ in ranges], workers)
            selection = WINDOW_ASSETS + PUBLISH_ASSETS  # the day-local assets are built
        undelivered: str | None = None
        for first, last, _, _ in ranges:
            progress.report("build", done, total, f"{first} .. {last}")
            try:
                retried += _execute(defs, daily_job.name, instance, range_tags(first, last), f"days {first} .. {last}",
                                    selection)
            except NoticesNotDeliveredError as exc:  # the range is built and published: the webhook must not stop the rest
                undelivered = exc.cause
            done += (last - first).days + 1
        progress.report("build", total, total, f"{ranges[0][0]} .. {ranges[-1][1]}")
        result = RunResult(ranges[0][0], ranges[-1][1], retried, tuple((first, last) for first, last, _, _ in ranges))
        if undelivered is not None:
            failed = NoticesNotDeliveredError(f"days {ranges[0][0]} .. {ranges[-1][1]}", undelivered)
            failed.result = result  # every day is built and published: the CLI prints the summary before the error
            raise failed
    return result


def _run_failure_cause(events) -> str:
    """Why a run failed that no step failure explains (stopped between steps by a signal, say): its run-failure
    event's error, else its message ("see the Dagster logs" named logs an ephemeral instance does not keep)."""
    from pipelines.defs.nightly.sensors import root_cause

    failed = next((event for event in events if event.is_run_failure), None)
    error = getattr(failed.event_specific_data, "error", None) if failed is not None else None
    if error is not None:
        return root_cause(error)
    return (failed.message if failed is not None and failed.message else None) or "the run failed without a step failing"


def _clear_days_before_partitions(conn) -> None:
    """``partitions.clear_days_before_start``, its warning said (after ``--all-days`` marked every staged day)."""
    from pipelines.defs.partitions import clear_days_before_start

    if said := clear_days_before_start(conn):
        progress.warn(said)
        warehouse.record_unbuilt_days(conn, os.environ["CACHEMETER_DB"])


def instance_of_home(home: Path) -> dg.DagsterInstance:
    """Dagster's instance of ``home`` (``DAGSTER_HOME``, created if missing: Dagster requires it to exist), opened by
    one process at a time. Opening creates or migrates its SQLite storage, which is not safe to do twice at once:
    two runs started together on a new ``DAGSTER_HOME`` stopped with "table runs already exists" or "UNIQUE
    constraint failed: alembic_version.version_num" (a break test: 3 of 6 pairs), before either reached the
    warehouse lock that names the other run. An exclusive ``flock`` on ``home/.cachemeter-instance.lock`` around
    the open: 0 of 8 pairs failed. Raises ``OSError`` when ``home`` cannot be created or written, ``PipelineError``
    naming the file when Dagster cannot open the instance its ``dagster.yaml`` describes."""
    import fcntl

    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".cachemeter-instance.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            return dg.DagsterInstance.get()
        except Exception as exc:  # its dagster.yaml: bad YAML, an unknown key, a storage whose driver is missing
            # (each stopped the run with "an unexpected error ... please report it", a break test)
            detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise PipelineError(f"Dagster's instance in DAGSTER_HOME={home} cannot be opened: {type(exc).__name__}: "
                                f"{detail} (check {home / 'dagster.yaml'}; `cachemeter doctor` checks it too)") from exc


def _execute(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, tags: dict, what: str,
             assets: list[list[str]] | None = None) -> int:
    """Run ``job_name`` in this process (only ``assets`` when given); returns the steps Dagster ran again
    (``RetryRequested``). Raises ``PipelineError`` with the first failed step's cause."""
    from pipelines.defs.nightly.sensors import root_cause, step_cause

    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    selection = [dg.AssetKey(key) for key in assets] if assets else None
    with _recorded_as_code_location(instance, job_name):
        result = defs.resolve_job_def(job_name).execute_in_process(
            instance=instance, run_config=quiet, tags={**tags, **CLI_TRIGGER, **dead_runs.run_tags()}, raise_on_error=False,
            asset_selection=selection)
    if not result.success:
        failures = [event for event in result.all_events if event.is_step_failure]
        if failures and {event.step_key for event in failures} == {DELIVERY_STEP}:  # the last step: all else is done
            raise NoticesNotDeliveredError(what, step_cause(result.all_events, failures[-1]))
        detail = root_cause(failures[0].step_failure_data.error) if failures else _run_failure_cause(result.all_events)
        raise PipelineError(f"{what} failed: {detail}{failed_check_details(result.get_asset_check_evaluations())}")
    return sum(event.is_step_up_for_retry for event in result.all_events)


def failed_check_details(evaluations: list) -> str:
    """One line per failed blocking check: its asset, name, violation count and ``offending`` examples.

    ``evaluations``: Dagster ``AssetCheckEvaluation`` objects of a run. Returns "" when none failed with
    ERROR severity (the message then ends with the step's cause alone).
    """
    lines = []
    for evaluation in evaluations:
        if evaluation.passed or evaluation.severity != dg.AssetCheckSeverity.ERROR:
            continue
        metadata = evaluation.metadata
        line = f"\n  {evaluation.asset_key.to_user_string()} {evaluation.check_name}"
        if "violations" in metadata:
            count = metadata["violations"].value
            line += f": {count} violation{'' if count == 1 else 's'} ({metadata['predicate'].value})"
        if "offending" in metadata:
            line += f"; for instance {json.dumps(metadata['offending'].value)}"
        lines.append(line)
    return "".join(lines)


@contextmanager
def _recorded_as_code_location(instance: dg.DagsterInstance, job_name: str) -> Iterator[None]:
    """Record the block's in-process run as a run of ``job_name`` in the code location ``CODE_LOCATION``.

    ``execute_in_process`` records no code-location origin, so the UI could show the run but not
    re-execute it. The UI re-executes by location, repository and job name only (it looks the job up in
    its own workspace), so the run is created with that origin; Dagster has no public parameter for it,
    hence this wrapper around the one instance's ``create_run_for_job`` for the block's duration.
    """
    from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
    from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin

    origin = RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin(CODE_LOCATION), SINGLETON_REPOSITORY_NAME),
                             job_name)
    create_run_for_job = instance.create_run_for_job

    def create_with_origin(*args, **kwargs):
        return create_run_for_job(*args, **{"remote_job_origin": origin, **kwargs})

    instance.create_run_for_job = create_with_origin
    try:
        yield
    finally:
        del instance.create_run_for_job
