"""Post incident notices (opened, resolved, retracted) to a webhook once each, recording every attempt.

The body is one of four formats (``payload``): generic JSON, a Slack incoming webhook, PagerDuty
Events v2, or an Alertmanager webhook payload. Sent with the standard library's
``urllib`` (one small POST per alert; no client library needed). The URL is a secret: it is never
logged, returned or stored, and error messages are scrubbed of it.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import duckdb

from pipelines.lib import options as options_table
from pipelines.lib.sql import statement


class DeliveryError(Exception):
    """A post that did not get a 2xx answer; ``http_status`` is None when there was no answer."""

    def __init__(self, message: str, http_status: int | None = None):
        super().__init__(message)
        self.http_status = http_status


@dataclass(frozen=True)
class DeliveryReport:
    """Counts of one delivery pass: notices delivered, failed (tried again next pass), dead-lettered
    (refused as a request ``max_attempts`` times, ``REFUSED_REQUEST``: given up, visible in
    marts.alert_deliveries), left for the next pass (the time budget ran out); ``last_error``: the last failed
    attempt's error (never the URL), None when none failed."""

    delivered: int
    failed: int
    dead_letter: int = 0
    deferred: int = 0
    last_error: str | None = None


@dataclass(frozen=True)
class DeliveryOptions:
    """How notices are sent: ``format`` (generic, slack, pagerduty, alertmanager), the PagerDuty
    ``routing_key`` (a secret like the URL), ``max_attempts`` per notice before it is dead-lettered,
    the per-post ``timeout_seconds``, the pass's ``time_budget_seconds``, and ``window_days``: only
    incidents still open or opened this many days before the newest one are announced (no history
    flood when delivery is first enabled)."""

    format: str = "generic"
    routing_key: str | None = None
    max_attempts: int = 5
    timeout_seconds: float = 10
    time_budget_seconds: float = 120
    window_days: int = 3


FORMATS = options_table.BY_NAME["webhook_format"].choices  # declared once, with the setting
# HTTP answers that refuse the request itself (its body: malformed, conflicting, too large, of a type or content the
# receiver rejects), which no later attempt of the same notice changes: only these are dead-lettered after
# max_attempts (RFC 9110, section 15.5)
REFUSED_REQUEST = frozenset({400, 409, 413, 415, 422})


def pending_params(window_days: int) -> dict:
    """The parameters of ``sql/alerts/alert_deliveries__pending.sql`` (which counts the refusals by REFUSED_REQUEST)."""
    return {"window_days": window_days, "refused": sorted(REFUSED_REQUEST)}


def setup_problem(options: DeliveryOptions) -> str | None:
    """What in the delivery settings makes every post fail whatever the webhook does (one line, naming the setting),
    or None: an unknown ``format``, or ``pagerduty`` without its routing key (PagerDuty refuses every event without
    one; before, each was posted with ``"routing_key": null``)."""
    if options.format not in FORMATS:
        return f"webhook.format {options.format!r} is not one of {', '.join(FORMATS)}"
    if options.format == "pagerduty" and not (options.routing_key or "").strip():
        return ("webhook.format is pagerduty but its routing key is not set (the variable webhook.routing_key_env "
                "names, CACHEMETER_PAGERDUTY_ROUTING_KEY by default)")
    return None


def run_notice_payload(text: str, fields: dict, key: str, options: DeliveryOptions = DeliveryOptions()) -> dict:
    """The JSON body of a notice about the runs themselves (a failed run, a day not built by the deadline: not an
    incident) in ``options.format``: ``text`` is its one line, ``fields`` its details (``event`` names it), ``key``
    its dedup key. Generic: ``{"text", "cachemeter": fields}``; Slack: ``{"text"}``; PagerDuty: a critical trigger
    event; Alertmanager: one firing alert. (Before, every format got the generic body, which PagerDuty and
    Alertmanager refuse: a break test.) Raises ``ValueError`` for an unknown format."""
    if options.format == "generic":
        return {"text": text, "cachemeter": fields}
    if options.format == "slack":
        return {"text": text}
    if options.format == "pagerduty":
        return _pagerduty(options, key, True, {"summary": text[:1024], "source": "cachemeter", "severity": "critical",
                                               "custom_details": fields})
    if options.format == "alertmanager":
        labels = {"alertname": f"cachemeter_{fields.get('event', 'notice')}", "severity": "critical"}
        return _alertmanager(key, True, labels, {"summary": text}, None, None)
    raise ValueError(f"unknown delivery format {options.format!r}: use one of {', '.join(FORMATS)}")


def _pagerduty(options: DeliveryOptions, key: str, firing: bool, event: dict) -> dict:
    """A PagerDuty Events v2 body: trigger while ``firing``, else resolve, deduplicated on ``key``."""
    return {"routing_key": options.routing_key, "event_action": "trigger" if firing else "resolve", "dedup_key": key,
            "payload": event}


def _alertmanager(key: str, firing: bool, labels: dict, annotations: dict, starts: str | None,
                  ends: str | None) -> dict:
    """An Alertmanager webhook payload (v4) of one alert, grouped and fingerprinted by ``key``."""
    status = "firing" if firing else "resolved"
    alert = {"status": status, "labels": labels, "annotations": annotations, "startsAt": starts,
             "endsAt": ends or "0001-01-01T00:00:00Z", "fingerprint": key[:16]}
    return {"version": "4", "groupKey": key, "status": status, "receiver": "cachemeter",
            "groupLabels": {"alertname": labels["alertname"]}, "commonLabels": labels, "commonAnnotations": annotations,
            "externalURL": "", "truncatedAlerts": 0, "alerts": [alert]}


def _iso(day) -> str | None:
    return None if day is None else f"{day.isoformat()}T00:00:00Z"


def payload(notice: dict, options: DeliveryOptions = DeliveryOptions()) -> dict:
    """The JSON body of one notice (``opened``, ``resolved``, ``retracted``, or for an incident opened again after its
    resolution was delivered ``reopened:<n>`` and ``resolved:<n>``, n its cycle from 2) in ``options.format``.

    ``notice`` is a row of ``sql/alerts/alert_deliveries__pending.sql``. Firing while opened; resolved
    (and, for a retraction, ``retracted: true``) otherwise. Raises ``ValueError`` for an unknown format.
    """
    kind, _, cycle = notice["notice"].partition(":")  # reopened:2, resolved:2: an incident's second cycle
    firing = kind in ("opened", "reopened")
    status = "firing" if firing else "resolved"
    labels = {k: notice[k] for k in ("rule", "severity", "provider", "model", "tenant", "app", "prefix_family")
              if notice.get(k) is not None}
    lost = None if notice.get("lost_savings_usd") is None else str(notice["lost_savings_usd"])
    verb = {"opened": "opened", "reopened": "opened again (later data shows it after its resolution)",
            "resolved": "resolved", "retracted": "retracted (a rebuild no longer finds it)"}[kind]
    text = f"[{notice.get('severity') or 'info'}] {notice.get('rule') or 'incident'} {verb}: {notice.get('message') or notice['incident_key']}"
    starts, ends = _iso(notice.get("opened_day")), None if firing else _iso(notice.get("resolved_day") or notice.get("last_day"))
    if options.format == "slack":
        return {"text": text}
    if options.format == "pagerduty":
        return _pagerduty(options, notice["incident_key"], firing, {
            "summary": text[:1024], "source": "cachemeter",
            "severity": "critical" if notice.get("severity") == "critical" else "warning",
            "timestamp": starts, "custom_details": {**labels, "lost_savings_usd": lost}})
    if options.format == "alertmanager":
        return _alertmanager(notice["incident_key"], firing,
                             {"alertname": f"cachemeter_{labels.get('rule', 'incident')}", **labels},
                             {"summary": text, "lost_savings_usd": lost or ""}, starts, ends)
    if options.format == "generic":
        return {"incident_key": notice["incident_key"], "notice": kind, "cycle": int(cycle or 1), "status": status,
                "retracted": kind == "retracted", "startsAt": starts, "endsAt": ends, "labels": labels,
                "message": notice.get("message"), "lost_savings_usd": lost, "text": text}
    raise ValueError(f"unknown delivery format {options.format!r}: use one of {', '.join(FORMATS)}")


def post_json(url: str, body: dict, timeout_seconds: float = 10, headers: dict | None = None) -> int:
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
                                         headers={"Content-Type": "application/json", "User-Agent": "cachemeter",
                                                  **(headers or {})})
        with _NO_REDIRECTS.open(request, timeout=timeout_seconds) as response:  # noqa: S310 (URL is the user's own)
            return response.status
    except urllib.error.HTTPError as exc:
        exc.close()
        moved = " (a redirect: set the webhook URL to the address it points to)" if 300 <= exc.code < 400 else ""
        failure = DeliveryError(f"HTTP {exc.code}{moved}", exc.code)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        failure = DeliveryError(_describe(getattr(exc, "reason", exc)))
    raise failure


class _Unfollowed(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: urllib answers a 301, 302 or 303 to a POST with a GET without the body, so a webhook URL
    that redirects (``http://`` to ``https://``, a missing trailing slash) took nothing yet was recorded as delivered
    (a break test). The 3xx is a failed attempt naming the fix instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises the 3xx as an HTTPError


_NO_REDIRECTS = urllib.request.build_opener(_Unfollowed)

MALFORMED_URL = "the webhook URL is malformed (it needs http:// or https:// and a host; not shown, it is a secret)"


def check_url(url: str) -> None:
    """Raise ``DeliveryError`` (without the URL) unless ``url`` is an ``http``/``https`` URL with a host."""
    try:
        parts = urllib.parse.urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # e.g. an unclosed IPv6 bracket or a port out of range
        ok = False
    # a space or line break inside (not around: those are trimmed) fails every post as InvalidURL, and was retried
    # night after night as if the webhook were down (a break test)
    ok = ok and not any(character.isspace() for character in url.strip())
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


def deliver_pending(conn: duckdb.DuckDBPyConnection, url: str, post: Callable[..., int] = post_json,
                    options: DeliveryOptions = DeliveryOptions(), clock: Callable[[], float] = time.monotonic) -> DeliveryReport:
    """Post every notice due (``sql/alerts/alert_deliveries__pending.sql``) once; returns the pass's counts.

    A notice is one incident's ``opened``, ``resolved`` or ``retracted``; each goes out with the header
    ``Idempotency-Key: <incident_key>:<notice>`` (the same on every attempt, so a receiver that got a
    post whose answer was lost can drop the repeat; PagerDuty and Alertmanager also dedupe on the
    dedup key / fingerprint). Each attempt is recorded in ``marts.alert_deliveries``; a notice that
    fails is tried again by the next pass (the asset fails, and Dagster's ``RetryPolicy`` runs the pass
    again with backoff, so there is no retry loop here), and after ``max_attempts`` failures it is
    recorded as ``dead_letter`` and not tried again, but only when each was the webhook refusing this very request
    (``REFUSED_REQUEST``: its body, which no later attempt changes; an outage's failures before them do not count:
    a break test saw one 400 after six 503s dead-letter an incident that was never announced). A webhook that is down, slow, redirecting,
    rate-limiting or refusing the URL or its credentials (no answer, 5xx, 3xx, 429, 401, 403, 404) keeps every
    notice due, however many nights that lasts, and fails each run's pass until it is fixed. (Given up after five
    attempts of any kind, an outage of two nights lost its incidents for good and the runs after it went green: a
    break test.)
    Notices left when ``time_budget_seconds`` runs out wait for the next pass. Raises ``DeliveryError``
    (without the URL) for a malformed URL.
    """
    check_url(url)  # a malformed URL fails every post: one clear error (without the URL), no attempts recorded
    cursor = conn.execute(statement("alerts/alert_deliveries__pending"), pending_params(options.window_days))
    columns = [d[0] for d in cursor.description]
    pending = [dict(zip(columns, row)) for row in cursor.fetchall()]
    delivered = failed = dead = deferred = 0
    last_error = None
    not_opened = set()  # incidents whose 'opened' failed in this pass: their 'resolved' waits for it
    started = clock()
    for notice in pending:
        if clock() - started > options.time_budget_seconds or (
                notice["notice"].startswith("resolved") and notice["incident_key"] in not_opened):
            deferred += 1
            continue
        key = f"{notice['incident_key']}:{notice['notice']}"
        try:
            status = post(url, payload(notice, options), timeout_seconds=options.timeout_seconds,
                          headers={"Idempotency-Key": key})
            error = None
        except DeliveryError as exc:
            status, error = exc.http_status, str(exc).replace(url, "<webhook>")
        ok = error is None and status is not None and 200 <= status < 300
        attempt = notice["attempts"] + 1
        refused = status in REFUSED_REQUEST and not ok
        state = ("delivered" if ok else "dead_letter" if refused and notice["refusals"] + 1 >= options.max_attempts
                 else "failed")
        if not ok:
            last_error = error or f"HTTP {status}"
        conn.execute(statement("alerts/alert_deliveries__insert"), {
            "alert_id": notice["incident_key"], "notice": notice["notice"], "attempt": attempt, "status": state,
            "http_status": status, "error": error})
        delivered, failed, dead = delivered + ok, failed + (state == "failed"), dead + (state == "dead_letter")
        if not ok and notice["notice"].startswith(("opened", "reopened")):  # its resolution waits for it
            not_opened.add(notice["incident_key"])
    return DeliveryReport(delivered, failed, dead, deferred, last_error)
