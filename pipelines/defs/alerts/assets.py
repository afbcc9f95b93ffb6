"""marts.cache_alerts (daily evidence of each rule), marts.cache_incidents (the incidents built from it, with
their events and the series evaluations) and marts.alert_deliveries (webhook posts)."""

import os

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.catalog import table_spec
from pipelines.defs.daily import add_day_metadata, daily_asset
from pipelines.defs.partitions import window_params
from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import alert_rules, incidents, progress, webhook
from pipelines.lib.sql import params_for, statement
from pipelines.lib.warehouse import transaction

# one SQL file per rule, in the declared order: sql/alerts/cache_alerts__insert_<rule>.sql
RULES = alert_rules.NAMES


@daily_asset(["marts", "cache_alerts"], deps=[dg.AssetKey(["core", "usage"]), dg.AssetKey(["core", "usage_costs"]),
                                            dg.AssetKey(["marts", "cost_reconciliation"]),
                                            # negative_cache_roi reads the families' day rows
                                            dg.AssetKey(["marts", "prefix_families"])])
def cache_alerts(context: dg.AssetExecutionContext, duckdb: DuckDBResource,
                 settings: CachemeterSettings) -> dg.MaterializeResult:
    """Recompute the window's alerts, every rule in ``RULES`` (stable ``alert_id``: re-runs never duplicate),
    then the incidents from all stored evidence (``pipelines/lib/incidents.py``: marts.cache_incidents,
    marts.cache_incident_events, marts.series_evaluations; only series whose days changed are judged
    again), in the same transaction."""
    params = window_params(context)
    rule_params = {**params, **settings.sql_params()}
    with warehouse_connection(duckdb) as conn:
        with transaction(conn):
            conn.execute(statement("alerts/cache_alerts__delete_window"), params)
            # the series-day aggregates the rules' baselines read (the window's days, plus any missing)
            conn.execute(statement("marts/series_days__delete_window"), params)
            days = [day for (day,) in conn.execute(statement("marts/series_days__days"),
                                                    {**params, "alert_baseline_days": settings.alert_baseline_days}).fetchall()]
            if days:
                conn.execute(statement("marts/series_days__insert_window"), {"days": days, "first": days[0], "last": days[-1]})
            for rule in RULES:
                text = statement(f"alerts/cache_alerts__insert_{rule}")
                conn.execute(text, params_for(text, rule_params))
            counts = incidents.rebuild(conn, settings.incident_thresholds(), settings.complete_lag_hours,
                                       settings.roi_window_days)
            # the last daily asset: the window's days are rebuilt end to end, no longer pending (a run
            # that dies earlier leaves them pending, so the next run rebuilds them)
            conn.execute(statement("core/pending_days__delete_window"), params)
        add_day_metadata(context, conn.execute(
            "select day, count(*) as rows, count(*) filter (where severity = 'critical') as critical "
            "from marts.cache_alerts where day >= $start and day < $end group by day", params), params)
        alerts = conn.execute("select day, severity, message from marts.cache_alerts "
                              "where day >= $start and day < $end order by day, severity", params).fetchall()
    for day, severity, message in alerts:
        context.log.warning(f"{day} {severity}: {message}")
    table = "\n".join(["| day | severity | message |", "|---|---|---|"] + [f"| {d} | {s} | {m} |" for d, s, m in alerts])
    return dg.MaterializeResult(metadata={"window_rows": len(alerts), "alerts": dg.MetadataValue.md(table),
                                          "open_incidents": counts["open"], "resolved_incidents": counts["resolved"],
                                          "retracted_incidents": counts["retracted"],
                                          "last_complete_day": str(counts["last_complete_day"]),
                                          "judged_series": counts["judged_series"], "judged_series_days": counts["judged_days"],
                                          "kept_series": counts["kept_series"]})


# a webhook that is down for a moment: the pass runs again 10 then 20 s later (only notices not yet delivered are posted)
DELIVERY_RETRY = dg.RetryPolicy(max_retries=2, delay=10, backoff=dg.Backoff.EXPONENTIAL)


def build_alert_deliveries(retry_policy: dg.RetryPolicy = DELIVERY_RETRY) -> dg.AssetsDefinition:
    """The delivery asset with ``retry_policy`` (the tests give it one without the seconds of delay)."""
    return dg.asset(key=["marts", "alert_deliveries"], deps=[dg.AssetKey(["publish", "warehouse_snapshot"])],
                    kinds={"duckdb"}, pool="duckdb", **table_spec(["marts", "alert_deliveries"]),
                    retry_policy=retry_policy)(_deliver)


def _deliver(context: dg.AssetExecutionContext, duckdb: DuckDBResource,
             settings: CachemeterSettings) -> dg.MaterializeResult:
    """Post each incident notice due once (opened, resolved, retracted; ``lib/webhook.py``); fails (and is
    retried by its ``RetryPolicy``) while any notice failed or was dead-lettered in this pass.

    Runs after the snapshot is published, so a webhook outage never holds back the warehouse's readers;
    the attempts it records reach the snapshot of the next run.
    """
    url = os.environ.get(settings.webhook_url_env)
    if not url:
        return dg.MaterializeResult(metadata={"delivered": 0, "failed": 0,
                                              "webhook": f"not configured: set {settings.webhook_url_env}"})
    options = webhook.DeliveryOptions(
        format=settings.webhook_format, routing_key=os.environ.get(settings.webhook_routing_key_env),
        max_attempts=settings.webhook_max_attempts, timeout_seconds=settings.webhook_timeout_seconds,
        time_budget_seconds=settings.webhook_time_budget_seconds, window_days=settings.webhook_window_days)
    if problem := webhook.setup_problem(options):  # trying again cannot help: fix the setting
        raise dg.Failure(problem, allow_retries=False)
    with warehouse_connection(duckdb) as conn:
        try:
            report = webhook.deliver_pending(conn, url, options=options)
        except webhook.DeliveryError as exc:  # a malformed URL: trying again cannot help (message without the URL)
            raise dg.Failure(str(exc), allow_retries=False) from None
    counts = {"delivered": report.delivered, "failed": report.failed, "dead_letter": report.dead_letter,
              "deferred": report.deferred}
    if report.deferred and not (report.failed or report.dead_letter):  # held back by the pass's time budget: the run
        # was green without a word (a break test)
        held = (f"{report.deferred} incident notice(s) still due: the webhook time budget "
                f"({options.time_budget_seconds:g} s, webhook.time_budget_seconds) ran out; the next run posts them")
        context.log.warning(held)
        progress.warn(held)
    if report.failed or report.dead_letter:
        raise dg.Failure(f"{report.failed + report.dead_letter} notice(s) not delivered ({report.delivered} delivered, "
                         f"{report.dead_letter} given up as dead_letter; last error: {report.last_error})",
                         metadata=counts)
    return dg.MaterializeResult(metadata={**counts, "webhook": "configured", "format": options.format})


alert_deliveries = build_alert_deliveries()
