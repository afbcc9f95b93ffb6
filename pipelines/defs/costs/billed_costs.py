"""core.billed_costs: the providers' cost reports (what was billed), loaded from the stored raw pages."""

from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.catalog import table_spec
from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings
from pipelines.defs.sources.assets import USAGE_API_PAGES
from pipelines.lib.usage_api import cost_report

BILLED_COSTS = dg.AssetKey(["core", "billed_costs"])


@dg.asset(key=BILLED_COSTS, deps=[USAGE_API_PAGES], kinds={"duckdb"}, pool="duckdb", **table_spec(["core", "billed_costs"]))
def billed_costs(context: dg.AssetExecutionContext, duckdb: DuckDBResource,
                 settings: CachemeterSettings) -> dg.MaterializeResult:
    """Replace each stored cost-report day in ``core.billed_costs`` (``usage_api/cost_report.load``).

    A page that cannot be loaded is quarantined with its reason and its day keeps its rows; the step
    still succeeds (the fetch step already failed for a failed page, and the next fetch replaces it).
    """
    if not settings.logs_dir:
        raise dg.Failure("no logs folder: set CACHEMETER_LOGS (the CLI: --logs) to the folder of usage logs")
    with warehouse_connection(duckdb) as conn:
        loaded = cost_report.load(conn, Path(settings.logs_dir))
        total = conn.execute("select count(*), coalesce(sum(billed_usd), 0) from core.billed_costs").fetchone()
    for page, reason in loaded.refused.items():
        context.log.warning(f"cost report page {page} quarantined: {reason}")
    return dg.MaterializeResult(metadata={"days_loaded": loaded.days, "rows_loaded": loaded.rows,
                                          "pages_quarantined": len(loaded.refused), "dagster/row_count": total[0],
                                          "billed_usd_exact": dg.MetadataValue.text(str(total[1]))})
