"""Late data within the day: notice new or changed log files and stage them without waiting for the night.

``late_logs_sensor`` (off by default: the nightly schedule stages every file anyway) compares the logs
folder with the manifest ``stage.files`` and, when a file is new or changed, requests a
``cachemeter_ingest`` run; ``pending_days_sensor`` then rebuilds the days that staging marked pending.
Run keys make each request happen once.
"""

import hashlib

import dagster as dg
from duckdb import DuckDBPyConnection, IOException
from dagster_duckdb import DuckDBResource

from pipelines.defs.nightly.jobs import TRIGGER, ingest_job
from pipelines.defs.settings import CachemeterSettings
from pipelines.ingest import discover, generations, objectstore
from pipelines.lib import warehouse


def changed_files(conn: DuckDBPyConnection, settings: CachemeterSettings) -> list[discover.LogFile]:
    """Log files that are not the file the manifest staged under their name, untouched since (device and
    inode, size, mtime, source.yaml defaults: ``generations.unchanged``), or could not be read; new files included."""
    known = {r[0]: generations.Entry(*r) for r in conn.execute(f"select {generations.MANIFEST_COLUMNS} from stage.files").fetchall()}
    return [log for log in objectstore.status(settings.logs_dir, settings.follow_symlinks)
            if log.error or log.relative not in known or known[log.relative].read_error
            or not generations.unchanged(log, known[log.relative])]


@dg.sensor(jobs=[ingest_job], minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.STOPPED,
           description="Stages new or changed log files during the day (the nightly schedule does it every night).")
def late_logs_sensor(context: dg.SensorEvaluationContext, duckdb: DuckDBResource, settings: CachemeterSettings):
    """Request one ingest run for the files that are new or changed since they were staged."""
    path = duckdb.database
    if not warehouse.exists(path):
        return dg.SkipReason("no warehouse yet: the nightly schedule (or `cachemeter run`) creates it")
    try:
        conn = warehouse.connect(path, read_only=True)
    except IOException:
        return dg.SkipReason("the warehouse is being written by a run; checking again next tick")
    with conn:
        changed = changed_files(conn, settings)
    if not changed:
        return dg.SkipReason("no new or changed log files")
    fingerprint = hashlib.sha256("|".join(f"{f.relative}:{f.size_bytes}:{f.mtime_ns}:{f.defaults_sha}"
                                          for f in changed).encode()).hexdigest()[:16]
    return dg.RunRequest(job_name=ingest_job.name, run_key=f"ingest-{fingerprint}",
                         tags={"cachemeter/changed_files": str(len(changed)), TRIGGER: "late_logs_sensor"})


@dg.definitions
def sensors() -> dg.Definitions:
    """Register the late-data sensor."""
    return dg.Definitions(sensors=[late_logs_sensor])
