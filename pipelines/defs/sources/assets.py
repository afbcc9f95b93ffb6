"""sources/usage_api_pages: a UTC day of the providers' usage APIs, stored raw under the logs folder.

Upstream of ``stage/files``: the pages land in ``<logs>/_cachemeter/usage_api/`` and the next staging
(the nightly ``cachemeter_ingest``) reads them like any log file. No warehouse access, so no
``duckdb`` pool. See ``pipelines/lib/usage_api/`` for what is fetched and how pages are stored.
"""

from pathlib import Path

import dagster as dg

from pipelines.defs.partitions import daily_partitions
from pipelines.defs.settings import CachemeterSettings
from pipelines.lib.usage_api import pages

USAGE_API_PAGES = dg.AssetKey(["sources", "usage_api_pages"])
# a failed page fails the step after every source was tried; Dagster runs it again 1 then 2 minutes later
# (a rate limit or an outage outlasting the client's own retries), and each try replaces the day's pages
RETRY = dg.RetryPolicy(max_retries=2, delay=60, backoff=dg.Backoff.EXPONENTIAL)


def build_usage_api_pages(retry_policy: dg.RetryPolicy = RETRY) -> dg.AssetsDefinition:
    """The asset with ``retry_policy`` (the tests give it one without the minutes of delay)."""
    return dg.asset(key=USAGE_API_PAGES, partitions_def=daily_partitions, retry_policy=retry_policy, kinds={"json"},
                    description="Raw pages of the OpenAI organisation Usage API (completions) and the Anthropic Admin "
                                "usage and cost reports for one UTC day, one file per (source, day, page) under "
                                "<logs>/_cachemeter/usage_api/; keys from OPENAI_ADMIN_KEY / ANTHROPIC_ADMIN_KEY.",
                    )(_fetch_partition)


def _fetch_partition(context: dg.AssetExecutionContext, settings: CachemeterSettings) -> dg.MaterializeResult:
    """Fetch the partition's day of every API with a key; metadata: pages per source, billed cost.

    No key set: nothing is fetched (one log line says so). A page that failed is stored as a record the
    ingest quarantines with its reason, then the step fails with the reasons (``RetryPolicy``).
    """
    config = pages.Config.from_env()
    if not pages.configured(config):
        context.log.info("usage APIs: no OPENAI_ADMIN_KEY or ANTHROPIC_ADMIN_KEY set, nothing fetched")
        return dg.MaterializeResult(metadata={"sources": 0, "pages": 0})
    if not settings.logs_dir:
        raise dg.Failure("no logs folder: set CACHEMETER_LOGS to the folder the usage-API pages are stored in")
    day = daily_partitions.time_window_for_partition_key(context.partition_key).start.date()
    results = pages.fetch_day(Path(settings.logs_dir), day, config)
    for result in results:
        context.log.info(f"{result.source} {day}: {result.pages} page(s), {result.written} written, "
                         f"{result.unchanged} unchanged, {result.removed} removed")
    metadata = {"sources": len(results), "pages": sum(r.pages for r in results),
                "pages_written": sum(r.written for r in results), "failed_pages": sum(bool(r.failure) for r in results),
                **{f"{r.source}_pages": r.pages for r in results},
                **{"billed_usd_exact": dg.MetadataValue.text(str(r.billed_usd)) for r in results if r.billed_usd is not None}}
    failures = [r.failure for r in results if r.failure]
    if failures:
        raise dg.Failure(description="; ".join(failures), metadata=metadata)
    return dg.MaterializeResult(metadata=metadata)


usage_api_pages = build_usage_api_pages()
