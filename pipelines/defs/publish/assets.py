"""warehouse snapshot: a read-only copy of the warehouse published after every run, for readers."""

import base64

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.catalog import OWNERS
from pipelines.defs.resources import warehouse_connection
from pipelines.lib import lake, options, side_process, warehouse


@dg.asset(
    key=["publish", "warehouse_snapshot"],
    deps=[dg.AssetKey(["marts", "daily_savings"]), dg.AssetKey(["marts", "prefix_families"]),
          dg.AssetKey(["marts", "cache_alerts"]), dg.AssetKey(["core", "quarantine"]),
          dg.AssetKey(["marts", "whatif_routing"]), dg.AssetKey(["marts", "whatif_cache_ttl"]),
          dg.AssetKey(["marts", "ttft_by_family"])],
    group_name="publish",
    owners=OWNERS,
    description="A read-only copy of the whole warehouse (<warehouse>.snapshot.duckdb), replaced atomically after "
                "every run: what `cachemeter sql` and other readers query while the next run writes (a DuckLake "
                "needs no copy: its readers query its last committed snapshot).",
    kinds={"duckdb"},
    pool="duckdb",
)
def warehouse_snapshot(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Checkpoint and copy the warehouse to ``<name>.snapshot.duckdb`` (atomic rename), rewriting only the blocks
    that changed in the snapshot before it when no reader holds that one (``lib/snapshot_copy.py``); the metadata
    says how many bytes were written (``bytes_written``) and whether it was (``spare_reused``).

    ``cachemeter sql`` and any DuckDB client opened read-only read the snapshot, so they answer while
    the next run holds the warehouse's single-writer lock. On a DuckLake nothing is copied: the
    metadata names the DuckLake snapshot the run committed last.
    """
    with warehouse_connection(duckdb) as conn:
        return dg.MaterializeResult(metadata=warehouse.publish_snapshot(conn, duckdb.database))


@dg.asset(
    key=["publish", "cache_report"],
    deps=[dg.AssetKey(["publish", "warehouse_snapshot"])],
    group_name="publish",
    owners=OWNERS,
    description="The daily cache report (report.html beside the warehouse; <name>.report.html for a warehouse not named "
                "cachemeter): savings, hit rates, prefix families and alerts of the last report_days (30) UTC days, "
                "one self-contained HTML file.",
    kinds={"html"},
)
def cache_report(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Write the report beside the warehouse (``warehouse.report_path``: the last ``report_days`` UTC days) from the
    snapshot; the charts also go into this asset's metadata as images, so the Dagster UI shows them.

    The images are rendered only when the run is recorded in a persistent Dagster instance (a
    ``DAGSTER_HOME``, a deployment): an ephemeral instance (``cachemeter run`` without ``DAGSTER_HOME``)
    forgets the metadata when the process ends, and rendering them (vl-convert's JavaScript engine
    started for three PNGs) is the costliest part of a small run's report.
    """
    out, pngs = warehouse.report_path(duckdb.database), not context.instance.is_ephemeral
    days = options.env_value("report_days")
    if lake.is_lake(duckdb.database):  # read through the run's own connection (its catalog admits one instance)
        from pipelines.lib import report

        with warehouse_connection(duckdb) as conn:
            data = report.load(conn, days=days)
        report.save(out, report.render_html(data))
        images = list(zip(report.CHART_TITLES, report.chart_pngs(data))) if pngs else []
    else:  # the snapshot, a file of its own, read by the side process (which holds pandas, Altair, vl-convert)
        images = side_process.running(("report",)).ask("report", str(warehouse.snapshot_path(duckdb.database)),
                                                      str(out), days, pngs)
    metadata = {"report": str(out)}
    if pngs:
        metadata["charts"] = dg.MetadataValue.md("\n\n".join(
            f"![{title}](data:image/png;base64,{base64.b64encode(png).decode()})"
            for title, png in images))
    return dg.MaterializeResult(metadata=metadata)
