"""Post alerts to a webhook once each, recording every attempt.

The body is Slack-compatible (``{"text": ...}``, which Slack, Mattermost and most chat webhooks
accept) and also carries the alert's fields for machines. Sent with the standard library's
``urllib`` (one small POST per alert; no client library needed). The URL is a secret: it is never
logged, returned or stored, and error messages are scrubbed of it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import duckdb

from pipelines.lib.sql import statement


class DeliveryError(Exception):
    """A post that did not get a 2xx answer; ``http_status`` is None when there was no answer."""

    def __init__(self, message: str, http_status: int | None = None):
        super().__init__(message)
        self.http_status = http_status


@dataclass(frozen=True)
class DeliveryReport:
    """Counts of one delivery pass: alerts delivered, alerts whose post failed (tried again next pass)."""

    delivered: int
    failed: int


def payload(alert: dict) -> dict:
    """Slack-compatible JSON for one alert: a one-line ``text`` plus the alert's fields."""
    lost = alert.get("lost_savings_usd")
    head = f"[{alert['severity']}] {alert['rule']} on {alert['day']}"
    return {
        "text": f"{head}: {alert['message']}",
        "alert": {k: (str(v) if isinstance(v, Decimal) else v.isoformat() if hasattr(v, "isoformat") else v)
                  for k, v in alert.items() if k != "attempts"},
        "lost_savings_usd": None if lost is None else str(lost),
    }


def post_json(url: str, body: dict, timeout_seconds: float = 10) -> int:
    """POST ``body`` as JSON; returns the HTTP status or raises ``DeliveryError`` (message without the URL)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "cachemeter"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:  # noqa: S310 (URL is the user's own)
            return response.status
    except urllib.error.HTTPError as exc:
        raise DeliveryError(f"HTTP {exc.code}", exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(str(reason).replace(url, "<webhook>")) from None


def deliver_pending(conn: duckdb.DuckDBPyConnection, url: str,
                    post: Callable[[str, dict], int] = post_json) -> DeliveryReport:
    """Post every alert without a 'delivered' record once; returns how many were delivered and how many failed.

    Each attempt is recorded in ``marts.alert_deliveries`` (numbered per alert across passes); an alert
    that fails is tried again on the next pass, and an alert already delivered is never posted again.
    There is no retry loop here: the asset that calls this (``marts/alert_deliveries``) fails when any
    alert failed, and its Dagster ``RetryPolicy`` runs the pass again with backoff.
    """
    cursor = conn.execute(statement("alerts/alert_deliveries__pending"))
    columns = [d[0] for d in cursor.description]
    pending = [dict(zip(columns, row)) for row in cursor.fetchall()]
    delivered = failed = 0
    for alert in pending:
        try:
            status, error = post(url, payload(alert)), None
        except DeliveryError as exc:
            status, error = exc.http_status, str(exc).replace(url, "<webhook>")
        ok = error is None and status is not None and 200 <= status < 300
        conn.execute(statement("alerts/alert_deliveries__insert"), {
            "alert_id": alert["alert_id"], "attempt": alert["attempts"] + 1, "status": "delivered" if ok else "failed",
            "http_status": status, "error": error})
        delivered, failed = delivered + ok, failed + (not ok)
    return DeliveryReport(delivered, failed)
