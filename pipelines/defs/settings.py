"""Run settings shared by the assets, read from environment variables with documented defaults.

| variable                      | default                          | meaning                                   |
|-------------------------------|----------------------------------|-------------------------------------------|
| CACHEMETER_DB                 | warehouse/cachemeter.duckdb      | DuckDB warehouse file (embedded, no server) |
| CACHEMETER_LOGS               | fixtures/demo_logs (bundled demo)| folder scanned recursively for usage logs |
| CACHEMETER_PRICES             | (none)                           | price override CSV (USD per million tokens) |
| CACHEMETER_FOLLOW_SYMLINKS    | 0                                | follow symlinks that leave the logs folder |
| CACHEMETER_ALERT_MIN_DROP     | 0.20                             | hit_rate_drop: absolute drop of token hit rate |
| CACHEMETER_ALERT_CRITICAL_DROP| 0.40                             | hit_rate_drop: drop that makes it critical |
| CACHEMETER_ALERT_MIN_REQUESTS | 50                               | hit_rate_drop: minimum requests on the day and in the baseline |
| CACHEMETER_ALERT_BASELINE_DAYS| 7                                | hit_rate_drop: trailing baseline window, days |
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DB = "warehouse/cachemeter.duckdb"
DEFAULT_LOGS = str(REPO_ROOT / "fixtures" / "demo_logs")


class CachemeterSettings(dg.ConfigurableResource):
    """Where the logs and price overrides are, and the alert thresholds (units in field names)."""

    logs_dir: str = DEFAULT_LOGS
    prices_file: str | None = None
    follow_symlinks: bool = False
    alert_min_drop: float = 0.20
    alert_critical_drop: float = 0.40
    alert_min_requests: int = 50
    alert_baseline_days: int = 7

    @classmethod
    def from_env(cls) -> "CachemeterSettings":
        """Settings from the ``CACHEMETER_*`` environment variables (see the module docstring)."""
        env = os.environ
        return cls(
            logs_dir=env.get("CACHEMETER_LOGS", DEFAULT_LOGS),
            prices_file=env.get("CACHEMETER_PRICES") or None,
            follow_symlinks=env.get("CACHEMETER_FOLLOW_SYMLINKS", "0") == "1",
            alert_min_drop=float(env.get("CACHEMETER_ALERT_MIN_DROP", "0.20")),
            alert_critical_drop=float(env.get("CACHEMETER_ALERT_CRITICAL_DROP", "0.40")),
            alert_min_requests=int(env.get("CACHEMETER_ALERT_MIN_REQUESTS", "50")),
            alert_baseline_days=int(env.get("CACHEMETER_ALERT_BASELINE_DAYS", "7")),
        )


def database_path() -> str:
    """The warehouse file from ``CACHEMETER_DB`` (default ``warehouse/cachemeter.duckdb``)."""
    return os.environ.get("CACHEMETER_DB", DEFAULT_DB)
