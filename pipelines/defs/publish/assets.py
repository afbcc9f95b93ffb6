"""warehouse snapshot: a read-only copy of the warehouse published after every run, for readers."""

import base64
from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.catalog import OWNERS
from pipelines.defs.resources import warehouse_connection
from pipelines.lib import report, warehouse


@dg.asset(
    key=["publish", "warehouse_snapshot"],
    deps=[dg.AssetKey(["marts", "daily_savings"]), dg.AssetKey(["marts", "prefix_families"]),
          dg.AssetKey(["marts", "cache_alerts"]), dg.AssetKey(["core", "quarantine"]),
          dg.AssetKey(["marts", "whatif_routing"]), dg.AssetKey(["marts", "whatif_cache_ttl"]),
          dg.AssetKey(["marts", "ttft_by_family"])],
    group_name="publish",
    owners=OWNERS,
    description="A read-only copy of the whole warehouse (<warehouse>.snapshot.duckdb), replaced atomically after "
                "every run: what `cachemeter sql` and other readers query while the next run writes.",
    kinds={"duckdb"},
    pool="duckdb",
)
def warehouse_snapshot(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Checkpoint and copy the warehouse to ``<name>.snapshot.duckdb`` (atomic rename).

    ``cachemeter sql`` and any DuckDB client opened read-only read the snapshot, so they answer while
    the next run holds the warehouse's single-writer lock.
    """
    with warehouse_connection(duckdb) as conn:
        target = warehouse.publish_snapshot(conn, duckdb.database)
    return dg.MaterializeResult(metadata={"snapshot": str(target), "bytes": target.stat().st_size})


@dg.asset(
    key=["publish", "cache_report"],
    deps=[dg.AssetKey(["publish", "warehouse_snapshot"])],
    group_name="publish",
    owners=OWNERS,
    description="The daily cache report (report.html beside the warehouse): savings, hit rates, prefix families "
                "and alerts of the last 30 days, one self-contained HTML file.",
    kinds={"html"},
)
def cache_report(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Write ``<warehouse folder>/report.html`` (last 30 days) from the snapshot; the charts also go into
    this asset's metadata as images, so the Dagster UI shows them."""
    snapshot = warehouse.snapshot_path(duckdb.database)
    with warehouse.connect(snapshot, read_only=True) as conn:
        data = report.load(conn, days=30)
        out = Path(duckdb.database).with_name("report.html")
        report.save(out, report.render_html(data))
        pngs = report.chart_pngs(data)
    images = "\n\n".join(f"![{title}](data:image/png;base64,{base64.b64encode(png).decode()})"
                         for title, png in zip(report.CHART_TITLES, pngs))
    return dg.MaterializeResult(metadata={"report": str(out), "charts": dg.MetadataValue.md(images)})
