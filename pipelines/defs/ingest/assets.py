"""Ingest: stage provider usage logs into ``core.usage`` and ``core.quarantine``, file by file (manifest ``stage.files``)."""


from datetime import date

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs import checks
from pipelines.defs.catalog import table_spec
from pipelines.defs.nightly.jobs import CLI_TRIGGER, TRIGGER
from pipelines.defs.partitions import PARTITIONS_START, clear_days_before_start
from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings
from pipelines.defs.sources.assets import USAGE_API_PAGES
from pipelines.ingest import stage as ingest
from pipelines.lib import lake_lock, progress, side_process, warehouse
from pipelines.lib.sql import statement

STAGED_FILES = dg.AssetKey(["stage", "files"])
QUARANTINE = dg.AssetKey(["core", "quarantine"])
STAGING_WAIT_SECONDS = 1800  # a scheduled staging waits this long for a cachemeter run staging into the same lake


@dg.multi_asset(
    specs=[
        dg.AssetSpec(STAGED_FILES, kinds={"duckdb"}, deps=[USAGE_API_PAGES], **table_spec(["stage", "files"])),
        dg.AssetSpec(QUARANTINE, kinds={"duckdb"}, **table_spec(["core", "quarantine"])),
    ],
    check_specs=[checks.invariant_spec(["stage", "files"], "rows_in_equal_accepted_plus_quarantined",
                                       "per file: rows in = accepted + quarantined, and the tables hold exactly those rows")],
    pool="duckdb",
)
def staged_usage(context: dg.AssetExecutionContext, duckdb: DuckDBResource, settings: CachemeterSettings):
    """Stage new or changed files under the logs folder; metadata gives rows in/accepted/quarantined per file."""

    # a run of runner.run_pipeline builds the days in this same process after staging: new rows make days whose
    # checks validate with Great Expectations, so its side process (seconds of importing) starts with the first file
    # staged, beside staging (cachemeter run started it already, before importing Dagster). A scheduled run's days
    # run in a process of their own, which starts one there (nothing here).
    days_here = context.run.tags.get(TRIGGER) == CLI_TRIGGER[TRIGGER]

    def on_file(log, index, total):  # called only for files being staged
        if days_here:
            side_process.preload()
        progress.report("ingest", index, total, log.relative)

    if not settings.logs_dir:
        raise dg.Failure("no logs folder: set CACHEMETER_LOGS (the CLI: --logs) to the folder of usage logs")
    # one staging at a time on a lake whose catalog several processes write (a cachemeter run beside the nightly
    # automation staged a new file twice); a cachemeter run holds it already, a scheduled run waits for one
    with lake_lock.held(str(duckdb.database), STAGING_WAIT_SECONDS), warehouse_connection(duckdb) as conn:
        results = ingest.stage_logs(conn, settings.logs_dir, settings.follow_symlinks, on_file=on_file,
                                    earliest=date.fromisoformat(PARTITIONS_START))
        # every run, not only after staging: a run that died here left its pending days without them
        conn.execute(statement("core/pending_days__insert_dependents"), {"dependent_days": settings.dependent_days})
        if before_start := clear_days_before_start(conn):  # the nightly automation's runs say it too (a break test)
            context.log.warning(before_start)
            progress.warn(before_start)
        warehouse.record_unbuilt_days(conn, duckdb.database)  # for the snapshot's readers until a run publishes
        totals = conn.execute("select count(*), (select count(*) from core.quarantine) from core.usage").fetchall()[0]
        staged_before = conn.execute("select count(*) from stage.files").fetchall()[0][0] if not results else 0
        accounting = checks.invariant(conn, ["stage", "files"], "rows_in_equal_accepted_plus_quarantined",
                                      "files__rows_do_not_add_up", {})
    progress.report("ingest", len(results), len(results), "done")
    if staged_before:  # what an unmounted share or a wrong --logs looks like: not a quiet night
        empty = (f"the logs folder {settings.logs_dir} holds no log files, but this warehouse holds {staged_before} "
                 "file(s) staged before (their rows are kept): is the folder unmounted or emptied, or does --logs "
                 "name another folder?")
        context.log.warning(empty)
        progress.warn(empty)
    for result in results:
        if result.note:  # nothing lost, but the user should know (the Dagster log; the CLI prints it too)
            context.log.warning(f"{result.source_file}: {result.note}")
            progress.warn(f"{result.source_file}: {result.note}")
    staged = [r for r in results if not r.skipped]
    rows_in = sum(r.rows_in for r in staged)
    accepted = sum(r.rows_accepted for r in staged)
    quarantined = sum(r.rows_quarantined for r in staged)
    context.log.info(f"staged {len(staged)} of {len(results)} files: {rows_in} rows in = "
                     f"{accepted} accepted + {quarantined} quarantined")
    read = lambda r: "unchanged" if r.skipped else "appended lines" if r.appended else "whole"  # noqa: E731
    table = "\n".join(["| file | rows in | accepted | quarantined | read |", "|---|---:|---:|---:|---|"]
                      + [f"| {r.source_file} | {r.rows_in} | {r.rows_accepted} | {r.rows_quarantined} | {read(r)} |"
                         for r in results])
    yield dg.MaterializeResult(asset_key=STAGED_FILES, metadata={
        "files_found": len(results), "files_staged": len(staged),
        "files_appended_to": sum(r.appended for r in staged),  # only their new lines read (ingest/appends.py)
        "rows_in": rows_in,
        "rows_accepted": accepted, "rows_quarantined": quarantined,
        "core_usage_rows": totals[0], "dagster/row_count": len(results), "files": dg.MetadataValue.md(table)})
    yield dg.MaterializeResult(asset_key=QUARANTINE, metadata={"dagster/row_count": totals[1],
                                                               "rows_quarantined_this_run": quarantined})
    yield accounting
