"""Post alerts to a webhook once each, recording every attempt.

The body is Slack-compatible (``{"text": ...}``, which Slack, Mattermost and most chat webhooks
accept) and also carries the alert's fields for machines. Sent with the standard library's
``urllib`` (one small POST per alert; no client library needed). The URL is a secret: it is never
logged, returned or stored, and error messages are scrubbed of it.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.parse
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
    """POST ``body`` as JSON; returns the HTTP status or raises ``DeliveryError``.

    No part of the URL reaches the error: its message is built from the HTTP status or the OS
    error's own text, never from an exception's message (``http.client.InvalidURL``, ``urllib``'s
    "unknown url type" and TLS host mismatches quote the URL or its host), and it is raised outside
    the ``except`` block so no exception that holds the URL is chained to it.
    """
    check_url(url)
    failure: DeliveryError | None = None
    try:
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json", "User-Agent": "cachemeter"})
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:  # noqa: S310 (URL is the user's own)
            return response.status
    except urllib.error.HTTPError as exc:
        exc.close()
        failure = DeliveryError(f"HTTP {exc.code}", exc.code)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        failure = DeliveryError(_describe(getattr(exc, "reason", exc)))
    raise failure


MALFORMED_URL = "the webhook URL is malformed (it needs http:// or https:// and a host; not shown, it is a secret)"


def check_url(url: str) -> None:
    """Raise ``DeliveryError`` (without the URL) unless ``url`` is an ``http``/``https`` URL with a host."""
    try:
        parts = urllib.parse.urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # e.g. an unclosed IPv6 bracket or a port out of range
        ok = False
    if not ok:
        raise DeliveryError(MALFORMED_URL)


def _describe(reason: object) -> str:
    """What went wrong, in words that cannot quote the URL: the OS error text or the exception's kind."""
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ssl.SSLError):  # its text may name the host (certificate mismatch): the code only
        return f"TLS error ({reason.reason or type(reason).__name__})"
    if isinstance(reason, OSError) and reason.strerror:
        return f"{type(reason).__name__}: {reason.strerror}"
    if isinstance(reason, ValueError):
        return MALFORMED_URL
    return f"request failed ({type(reason).__name__})"


def deliver_pending(conn: duckdb.DuckDBPyConnection, url: str,
                    post: Callable[[str, dict], int] = post_json) -> DeliveryReport:
    """Post every alert without a 'delivered' record once; returns how many were delivered and how many failed.

    Each attempt is recorded in ``marts.alert_deliveries`` (numbered per alert across passes); an alert
    that fails is tried again on the next pass, and an alert already delivered is never posted again.
    There is no retry loop here: the asset that calls this (``marts/alert_deliveries``) fails when any
    alert failed, and its Dagster ``RetryPolicy`` runs the pass again with backoff. Raises
    ``DeliveryError`` (whose message does not contain the URL) when ``url`` is not an ``http``/``https`` URL.
    """
    check_url(url)  # a malformed URL fails every post: one clear error (without the URL), no attempts recorded
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
