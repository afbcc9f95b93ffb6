"""Alert delivery: a sensor that posts each new alert once to the webhook named in the settings."""

import os

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines.defs.resources import warehouse_connection
from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import webhook


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.STOPPED,
           description="Posts each new marts.cache_alerts row once to the webhook in $CACHEMETER_WEBHOOK_URL.")
def alert_webhook_sensor(context: dg.SensorEvaluationContext, duckdb: DuckDBResource,
                         settings: CachemeterSettings) -> dg.SkipReason:
    """Deliver pending alerts; the URL comes from the environment and never appears in logs."""
    url = os.environ.get(settings.webhook_url_env)
    if not url:
        return dg.SkipReason(f"set {settings.webhook_url_env} to deliver alerts")
    with warehouse_connection(duckdb) as conn:
        report = webhook.deliver_pending(conn, url)
    return dg.SkipReason(f"delivered {report.delivered} alert(s); {report.failed} still failing, retried next tick")


@dg.definitions
def sensors() -> dg.Definitions:
    """Register the alert delivery sensor."""
    return dg.Definitions(sensors=[alert_webhook_sensor])
