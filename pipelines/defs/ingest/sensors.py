"""Late data: notice new or changed log files and rebuild exactly the days they touch.

``late_logs_sensor`` compares the logs folder with the manifest ``stage.files``. When a file is new
or changed it requests a run of ``cachemeter_ingest`` (stage the files, rebuild prices); staging
records the touched days in ``stage.pending_days``, and the sensor then requests one run of
``cachemeter_nightly`` per pending day. Run keys make each request happen once.
"""

import hashlib
import os
from pathlib import Path

import dagster as dg
import duckdb

from pipelines.defs.jobs import nightly_job
from pipelines.defs.settings import CachemeterSettings, database_path
from pipelines.lib import generations, logfiles

INGEST_SELECTION = dg.AssetSelection.assets(["stage", "files"], ["core", "quarantine"], ["core", "prices"],
                                            ["core", "cache_minimums"])
ingest_job = dg.define_asset_job("cachemeter_ingest", selection=INGEST_SELECTION,
                                 description="Stage new or changed log files and rebuild the price book.")


def changed_files(conn: duckdb.DuckDBPyConnection, settings: CachemeterSettings) -> list[logfiles.LogFile]:
    """Log files that are not the file the manifest staged under their name, untouched since (device and
    inode, size, mtime, source.yaml defaults: ``generations.unchanged``), or could not be read; new files included."""
    known = {r[0]: generations.Entry(*r) for r in conn.execute(f"select {generations.MANIFEST_COLUMNS} from stage.files").fetchall()}
    return [log for log in logfiles.discover(Path(settings.logs_dir), settings.follow_symlinks)
            if log.error or log.relative not in known or known[log.relative].read_error
            or not generations.unchanged(log, known[log.relative])]


@dg.sensor(jobs=[ingest_job, nightly_job], minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.STOPPED)
def late_logs_sensor(context: dg.SensorEvaluationContext, settings: CachemeterSettings):
    """Request staging for changed files, then one partition run per day they touched."""
    path = database_path()
    if not os.path.exists(path):
        return dg.SkipReason("no warehouse yet: run the nightly job or `cachemeter run` once")
    try:
        conn = duckdb.connect(path, read_only=True)
    except duckdb.IOException:
        return dg.SkipReason("the warehouse is being written by a run; checking again next tick")
    with conn:
        changed = changed_files(conn, settings)
        pending = conn.execute("select day, max(staged_at) from stage.pending_days group by day order by day").fetchall()
    requests = []
    if changed:
        fingerprint = hashlib.sha256("|".join(f"{f.relative}:{f.size_bytes}:{f.mtime_ns}:{f.defaults_sha}"
                                              for f in changed).encode()).hexdigest()[:16]
        requests.append(dg.RunRequest(job_name=ingest_job.name, run_key=f"ingest-{fingerprint}",
                                      tags={"cachemeter/changed_files": str(len(changed))}))
    for day, staged_at in pending:
        requests.append(dg.RunRequest(job_name=nightly_job.name, partition_key=day.isoformat(),
                                      run_key=f"day-{day}-{staged_at.isoformat()}"))
    return requests or dg.SkipReason("no new or changed log files, no pending days")


@dg.definitions
def sensors() -> dg.Definitions:
    """Register the late-data sensor and the ingest job it launches."""
    return dg.Definitions(jobs=[ingest_job], sensors=[late_logs_sensor])
