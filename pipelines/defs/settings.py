"""Run settings shared by the assets, read from environment variables with documented defaults.

This table is the one list of cachemeter's environment variables. ``CACHEMETER_DB`` and
``CACHEMETER_LOGS`` are resolved when a run starts (``dg.EnvVar`` in ``resources.py``); the partition
start, the nightly cron and the deadline hour are part of the definitions, read when the code loads.

| variable                      | default                          | meaning                                   |
|-------------------------------|----------------------------------|-------------------------------------------|
| CACHEMETER_DB                 | (required; CLI: --db)            | DuckDB warehouse file, absolute path (embedded, no server), or ducklake:<catalog> (lib/lake.py) |
| CACHEMETER_DATA_PATH          | <catalog file>.files             | a DuckLake's Parquet folder, needed when its catalog is created (CLI: --data-path) |
| CACHEMETER_LOGS               | (required; CLI: --logs, demo)    | folder scanned recursively for usage logs |
| CACHEMETER_PARTITIONS_START   | 2020-01-01                       | first daily partition (UTC date); earlier records are quarantined |
| CACHEMETER_NIGHTLY_CRON       | 30 2 * * *                       | when the nightly schedule stages the logs (UTC) |
| CACHEMETER_NIGHTLY_DEADLINE_HOUR | 6                             | hour (UTC) by which yesterday must be built, else a notice |
| CACHEMETER_PRICES             | (none)                           | price override CSV (USD per million tokens) |
| CACHEMETER_FOLLOW_SYMLINKS    | 0                                | follow symlinks that leave the logs folder |
| CACHEMETER_ALERT_MIN_DROP     | 0.20                             | hit_rate_drop: absolute drop of token hit rate |
| CACHEMETER_ALERT_CRITICAL_DROP| 0.40                             | hit_rate_drop: drop that makes it critical |
| CACHEMETER_ALERT_MIN_REQUESTS | 50                               | hit_rate_drop: minimum requests on the day and in the baseline |
| CACHEMETER_ALERT_BASELINE_DAYS| 7                                | hit_rate_drop: trailing baseline window, days |
| CACHEMETER_CONFIG             | cachemeter.yaml (repository root)| alert thresholds file (documented defaults) |
| CACHEMETER_WEBHOOK_URL        | (none)                           | where incident notices are posted (name set in the config file) |
| CACHEMETER_PAGERDUTY_ROUTING_KEY | (none)                        | PagerDuty Events v2 routing key (webhook.format: pagerduty; a secret) |
| CACHEMETER_MEMORY_LIMIT       | 1GB                              | DuckDB buffer pool limit (lib/warehouse.py) |
| CACHEMETER_SQL_TIMEOUT        | 300                              | seconds an ad-hoc `cachemeter sql` query may run (0 = no limit) |
| CACHEMETER_GX_SAMPLE_ROWS     | 200000                           | rows Great Expectations validates per check at most (0 = all; lib/expectations.py) |
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from pipelines.lib import safe_yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DB = "warehouse/cachemeter.duckdb"
DEFAULT_LOGS = str(REPO_ROOT / "fixtures" / "demo_logs")
DEFAULT_CONFIG = str(REPO_ROOT / "cachemeter.yaml")


class CachemeterSettings(dg.ConfigurableResource):
    """Where the logs and price overrides are, and the alert thresholds (units in field names).

    Thresholds come from ``cachemeter.yaml`` (``CACHEMETER_CONFIG`` names another copy); the
    ``CACHEMETER_ALERT_*`` variables above override the hit-rate ones.
    """

    logs_dir: str = ""  # no default: a deployment names its logs folder (the CLI defaults to the bundled demo)
    prices_file: str | None = None
    follow_symlinks: bool = False
    alert_min_drop: float = 0.20
    alert_critical_drop: float = 0.40
    alert_min_requests: int = 50
    alert_baseline_days: int = 7
    roi_window_days: int = 7
    roi_min_write_premium_usd: float = 1.00
    below_minimum_margin: float = 0.80
    below_minimum_min_share: float = 0.50
    isolated_tenants: list[str] = []
    unpriced_min_requests: int = 1
    mismatch_share: float = 0.01
    mismatch_min_usd: float = 0.01
    mismatch_critical_share: float = 0.10
    quality_max_quarantine_share: float = 0.01
    quality_min_records: int = 100
    incident_recovery_drop: float = 0.10
    incident_recovery_days: int = 2
    incident_reference_days: int = 28
    incident_min_reference_days: int = 7
    incident_pool_max_days: int = 7
    incident_confidence_z: float = 2.0
    complete_lag_hours: float = 1.0
    webhook_url_env: str = "CACHEMETER_WEBHOOK_URL"
    webhook_format: str = "generic"
    webhook_routing_key_env: str = "CACHEMETER_PAGERDUTY_ROUTING_KEY"
    webhook_max_attempts: int = 5
    webhook_timeout_seconds: float = 10
    webhook_time_budget_seconds: float = 120
    webhook_window_days: int = 3

    @property
    def dependent_days(self) -> int:
        """Days after a UTC day whose stored results read it, so are rebuilt with it (days; 21 by default).

        With b = ``alert_baseline_days``: the prefix-family and hit-rate baselines read the b days
        before a day; a rotating-preamble incident starts on a day R whose previous traffic day (at
        most b + 1 back) did not meet its condition over its own b-day baseline, so R reads 2b + 1 days
        back, and R's alert mutes hit-rate drops for b - 1 more days: 3b in all. The negative-ROI rule
        compares the ``roi_window_days`` window ending on a day with the one ending the day before:
        ``roi_window_days`` back.
        """
        return max(3 * self.alert_baseline_days, self.roi_window_days)

    @classmethod
    def from_env(cls, logs_dir: str | dg.EnvVar | None = None) -> "CachemeterSettings":
        """Settings from ``cachemeter.yaml`` and the ``CACHEMETER_*`` variables (see the module docstring).

        ``logs_dir`` overrides ``CACHEMETER_LOGS`` (the Dagster resource passes ``dg.EnvVar``, resolved
        when a run starts). Raises ``ValueError`` naming the file when the configuration cannot be read.
        """
        env = os.environ
        config = load_config(Path(env.get("CACHEMETER_CONFIG", DEFAULT_CONFIG)))
        alerts, webhook = config.get("alerts", {}), config.get("webhook", {})
        rule = lambda name: alerts.get(name) or {}  # noqa: E731
        return cls(
            logs_dir=logs_dir if logs_dir is not None else env.get("CACHEMETER_LOGS", ""),
            prices_file=env.get("CACHEMETER_PRICES") or None,
            follow_symlinks=env.get("CACHEMETER_FOLLOW_SYMLINKS", "0") == "1",
            alert_min_drop=float(env.get("CACHEMETER_ALERT_MIN_DROP", rule("hit_rate_drop").get("min_drop", 0.20))),
            alert_critical_drop=float(env.get("CACHEMETER_ALERT_CRITICAL_DROP", rule("hit_rate_drop").get("critical_drop", 0.40))),
            alert_min_requests=int(env.get("CACHEMETER_ALERT_MIN_REQUESTS", alerts.get("min_requests", 50))),
            alert_baseline_days=int(env.get("CACHEMETER_ALERT_BASELINE_DAYS", alerts.get("baseline_days", 7))),
            roi_window_days=int(rule("negative_cache_roi").get("window_days", 7)),
            roi_min_write_premium_usd=float(rule("negative_cache_roi").get("min_write_premium_usd", 1.0)),
            below_minimum_margin=float(rule("below_cache_minimum").get("margin", 0.8)),
            below_minimum_min_share=float(rule("below_cache_minimum").get("min_share", 0.5)),
            isolated_tenants=[str(t) for t in rule("cross_tenant_prefix").get("isolated_tenants") or []],
            unpriced_min_requests=int(rule("unpriced_usage").get("min_requests", 1)),
            mismatch_share=float(rule("cost_mismatch").get("share", 0.01)),
            mismatch_min_usd=float(rule("cost_mismatch").get("min_usd", 0.01)),
            mismatch_critical_share=float(rule("cost_mismatch").get("critical_share", 0.10)),
            quality_max_quarantine_share=float(rule("data_quality").get("max_quarantine_share", 0.01)),
            quality_min_records=int(rule("data_quality").get("min_records", 100)),
            incident_recovery_drop=float(rule("incidents").get("recovery_drop", 0.10)),
            incident_recovery_days=int(rule("incidents").get("recovery_days", 2)),
            incident_reference_days=int(rule("incidents").get("reference_days", 28)),
            incident_min_reference_days=int(rule("incidents").get("min_reference_days", 7)),
            incident_pool_max_days=int(rule("incidents").get("pool_max_days", 7)),
            incident_confidence_z=float(rule("incidents").get("confidence_z", 2.0)),
            complete_lag_hours=float(rule("incidents").get("complete_lag_hours", 1.0)),
            webhook_url_env=str(webhook.get("url_env", "CACHEMETER_WEBHOOK_URL")),
            webhook_format=str(webhook.get("format", "generic")),
            webhook_routing_key_env=str(webhook.get("routing_key_env", "CACHEMETER_PAGERDUTY_ROUTING_KEY")),
            webhook_max_attempts=int(webhook.get("max_attempts", 5)),
            webhook_timeout_seconds=float(webhook.get("timeout_seconds", 10)),
            webhook_time_budget_seconds=float(webhook.get("time_budget_seconds", 120)),
            webhook_window_days=int(webhook.get("first_enable_window_days", 3)),
        )

    def incident_thresholds(self) -> "Thresholds":
        """The hit-rate incident rule's settings (``pipelines/lib/incidents.py``)."""
        from pipelines.lib.incidents import Thresholds

        return Thresholds(min_drop=self.alert_min_drop, critical_drop=self.alert_critical_drop,
                          recovery_drop=self.incident_recovery_drop, recovery_days=self.incident_recovery_days,
                          min_requests=self.alert_min_requests, reference_days=self.incident_reference_days,
                          min_reference_days=self.incident_min_reference_days, pool_max_days=self.incident_pool_max_days,
                          confidence_z=self.incident_confidence_z)


def load_config(path: Path) -> dict:
    """The parsed configuration file, ``{}`` when it does not exist; ``ValueError`` naming the file if invalid."""
    if not path.is_file():
        return {}
    data = safe_yaml.load_file(path) or {}  # YamlFileError (a ValueError): bad YAML, aliases, huge values
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping with 'alerts' and 'webhook'")
    return data
