"""Incidents with a lifecycle, from the daily evidence (marts.series_days, marts.cache_alerts).

A series (provider, model, tenant, app) is a small state machine over its complete days, so this is
a Python pass rather than SQL: whether a day opens an incident depends on the baseline, which only
reads days outside earlier incidents, and while an incident is open its baseline stays frozen
(a window function cannot carry that state). A series' lifecycle depends on nothing but its own
days, how many of them are complete and the thresholds, so a run judges again only the series whose
inputs changed (``stage.incident_series`` records them with the series' incidents); the others keep
their stored evaluations and incidents, which judging them again would give. A one-go build and
thirty nightly runs compute the same incidents from the same evidence.

Judging a series day d (``evaluate_series``):

* **Complete days only**: d is judged once the logs have moved past its end by ``complete_lag_hours``
  (the newest request time in core.usage); later days are ``held``.
* **Pooling**: the observation is the smallest run of the series' traffic days ending at d (at most
  ``pool_max_days`` calendar days) with ``min_requests`` requests; fewer is ``not_evaluated``.
* **Baseline**: cache reads / prompt tokens over the series' days of the ``reference_days`` before the
  observation that were not part of an incident, and the same over the observation's weekdays only
  (weekly seasonality); the lower of the two, so a day is only judged low if it is low against like
  days too. A gradual drift drags a trailing level along with it, so the same is also computed over
  the reference's days older than a week (when there are ``min_reference_days`` of them) and the
  higher of the two baselines is used. At least ``min_reference_days`` reference days are needed,
  else ``not_evaluated``.
* **Noise bound**: threshold = max(``min_drop``, ``confidence_z`` x sqrt(sd^2 / k + p(1-p) / n)) with sd
  the day-to-day standard deviation of the reference days' rates (from successive differences, so a
  drift is not mistaken for noise), k the days pooled, p and n the observation's rate and requests:
  a series that swings from day to day needs a larger drop.
* **Lifecycle**: baseline - observed >= threshold opens an incident, whose baseline and threshold
  are frozen; it resolves on the ``recovery_days``-th evaluated day in a row whose rate is within
  ``recovery_drop`` of the frozen baseline (hysteresis: ``recovery_drop`` < ``min_drop``). Lost savings
  accumulate every open day: (frozen baseline - observed) x prompt tokens x (input - cache read price).
  A series that sends no traffic for ``quiet_days`` complete days resolves its open incident on the last of them
  (the app was retired or renamed: before, such an incident stayed open for good; a break test); its series is
  judged again each night while an incident is open, since no new day of its own changes its inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from decimal import Decimal

USD = Decimal("1e-15")
RATE = Decimal("1e-9")


@dataclass(frozen=True)
class Thresholds:
    """The hit-rate incident rule's settings (rates 0..1, days, requests), without defaults: they are
    declared once in ``pipelines/lib/options.py`` (``CachemeterSettings.incident_thresholds()``)."""

    min_drop: float
    critical_drop: float
    recovery_drop: float
    recovery_days: int
    min_requests: int
    reference_days: int
    min_reference_days: int
    pool_max_days: int
    confidence_z: float
    quiet_days: int


@dataclass(frozen=True)
class SeriesDay:
    """One series' day of marts.series_days (tokens, requests, USD)."""

    day: date
    requests: int
    prompt_tokens: int
    cache_read_tokens: int
    read_discount_usd: Decimal | None

    @property
    def rate(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass
class Incident:
    """An incident as marts.cache_incidents stores it, plus its daily events."""

    incident_key: str
    rule: str
    severity: str
    scope: dict
    opened_day: date
    last_day: date
    baseline: float | None
    observed: float | None
    lost_savings_usd: Decimal | None
    resolved_day: date | None = None
    message: str = ""
    divergence_offset_chars: int | None = None
    divergence_offset_tokens: int | None = None
    events: list[dict] = field(default_factory=list)
    quiet_since: date | None = None  # a series incident resolved because its series sent no traffic from this day

    @property
    def status(self) -> str:
        return "open" if self.resolved_day is None else "resolved"

    def row(self) -> dict:
        return {"incident_key": self.incident_key, "rule": self.rule, "severity": self.severity, **self.scope,
                "opened_day": self.opened_day, "last_day": self.last_day, "resolved_day": self.resolved_day,
                "status": self.status, "baseline_token_hit_rate": self.baseline,
                "observed_token_hit_rate": self.observed, "lost_savings_usd": self.lost_savings_usd,
                "message": self.message, "divergence_offset_chars": self.divergence_offset_chars,
                "divergence_offset_tokens": self.divergence_offset_tokens}


SCOPE = ("provider", "model", "tenant", "app", "prefix_family")


def incident_key(rule_family: str, scope: dict, opened_day: date) -> str:
    """md5 of rule family | provider | model | tenant | app | prefix_family | opened day (stable across rebuilds)."""
    parts = [rule_family, *[scope.get(k) or "" for k in SCOPE], opened_day.isoformat()]
    return hashlib.md5("|".join(parts).encode()).hexdigest()


def last_complete_day(watermark, lag_hours: float) -> date | None:
    """The last UTC day whose end the logs (newest request time ``watermark``, UTC) passed by ``lag_hours``."""
    if watermark is None:
        return None
    moved = watermark - timedelta(hours=lag_hours)
    return moved.date() - timedelta(days=1)


def _lost(baseline: float, day: SeriesDay) -> Decimal:
    if day.read_discount_usd is None or baseline <= day.rate:
        return Decimal(0).quantize(USD)
    return (Decimal(baseline - day.rate).quantize(RATE) * day.read_discount_usd).quantize(USD)


def _pooled(days: list[SeriesDay], i: int, t: Thresholds) -> list[SeriesDay]:
    """The shortest run of traffic days ending at ``days[i]`` with ``min_requests`` requests (within pool_max_days)."""
    pool, requests = [], 0
    for j in range(i, -1, -1):
        if (days[i].day - days[j].day).days >= t.pool_max_days:
            break
        pool.append(days[j])
        requests += days[j].requests
        if requests >= t.min_requests:
            return pool
    return []


def _rate(days: list[SeriesDay]) -> float | None:
    prompt = sum(d.prompt_tokens for d in days)
    return sum(d.cache_read_tokens for d in days) / prompt if prompt else None


def evaluate_series(scope: dict, days: list[SeriesDay], last_complete: date | None,
                    t: Thresholds) -> tuple[list[dict], list[Incident]]:
    """Judge one series' days (sorted by day); returns its marts.series_evaluations rows and incidents.

    ``scope`` holds provider, model, tenant and app. Days after ``last_complete`` are held.
    """
    evaluations: list[dict] = []
    incidents: list[Incident] = []
    reference: list[SeriesDay] = []  # days outside incidents, judged or not
    current: Incident | None = None
    frozen_threshold = 0.0
    recovered = 0

    def record(day, status, reason=None, pool=(), observed=None, baseline=None, threshold=None, key=None):
        evaluations.append({"day": day, **scope, "status": status, "reason": reason, "pooled_days": len(pool) or None,
                            "requests": sum(d.requests for d in pool) or None, "observed": observed,
                            "baseline": baseline, "threshold": threshold, "incident_key": key})

    def quiet(until: date) -> None:  # resolve the open incident if its series sent nothing for quiet_days until then
        nonlocal current
        if current is not None and (until - last_traffic).days >= t.quiet_days:
            current.resolved_day = last_traffic + timedelta(days=t.quiet_days)
            current.quiet_since = last_traffic + timedelta(days=1)
            current.events.append({"incident_key": current.incident_key, "day": current.resolved_day,
                                   "event": "resolved", "observed_token_hit_rate": None,
                                   "lost_savings_usd": Decimal(0)})
            current = None

    last_traffic = None
    for i, today in enumerate(days):
        if last_complete is None or today.day > last_complete:
            record(today.day, "held", f"day not complete: the logs have not moved past it yet (complete up to {last_complete})")
            continue
        if last_traffic is not None:
            quiet(today.day - timedelta(days=1))
        last_traffic = today.day
        if current is not None:  # frozen baseline: keep accruing what the incident costs
            lost = _lost(current.baseline, today)
            current.lost_savings_usd += lost
        pool = _pooled(days, i, t)
        if not pool:
            reason = f"fewer than {t.min_requests} requests in {t.pool_max_days} days"
            record(today.day, "not_evaluated", reason, key=current.incident_key if current else None)
            if current is None:
                reference.append(today)
            else:
                current.events.append(_event(current, today, "still_open", lost))
            continue
        observed = _rate(pool)
        if current is not None:
            current.observed = observed
            drop = current.baseline - observed
            if observed >= current.baseline - t.recovery_drop:
                recovered += 1
            else:
                recovered = 0
            if drop >= frozen_threshold:
                current.last_day = today.day
                if drop >= t.critical_drop:
                    current.severity = "critical"
            record(today.day, "evaluated", None, pool, observed, current.baseline, frozen_threshold, current.incident_key)
            if recovered >= t.recovery_days:
                current.resolved_day = today.day
                current.events.append(_event(current, today, "resolved", lost))
                current = None
            else:
                current.events.append(_event(current, today, "still_open", lost))
            continue
        start = pool[-1].day
        ref = [d for d in reference if 0 < (start - d.day).days <= t.reference_days]
        ref_requests = sum(d.requests for d in ref)
        if len(ref) < t.min_reference_days or ref_requests < t.min_requests:
            record(today.day, "not_evaluated", f"history too short: {len(ref)} reference days, {t.min_reference_days} needed",
                   pool, observed)
            reference.append(today)
            continue
        weekdays = {d.day.weekday() for d in pool}
        baseline = _like_days_baseline(ref, weekdays)
        lagged = [d for d in ref if (start - d.day).days > 7]  # the older weeks: a drift has not reached them
        if len(lagged) >= t.min_reference_days:
            baseline = max(baseline, _like_days_baseline(lagged, weekdays))
        n = sum(d.requests for d in pool)
        noise = math.sqrt(_day_to_day_variance(ref) / len(pool) + observed * (1 - observed) / n)
        threshold = max(t.min_drop, t.confidence_z * noise)
        if baseline - observed >= threshold:
            current = Incident(
                incident_key=incident_key("hit_rate_drop", scope, today.day), rule="hit_rate_drop",
                severity="critical" if baseline - observed >= t.critical_drop else "warning", scope=dict(scope),
                opened_day=today.day, last_day=today.day, baseline=baseline, observed=observed,
                lost_savings_usd=_lost(baseline, today))
            frozen_threshold, recovered = threshold, 0
            current.events.append(_event(current, today, "opened", current.lost_savings_usd))
            incidents.append(current)
            record(today.day, "evaluated", None, pool, observed, baseline, threshold, current.incident_key)
        else:
            record(today.day, "evaluated", None, pool, observed, baseline, threshold)
            reference.append(today)
    if last_traffic is not None and last_complete is not None:
        quiet(last_complete)
    return evaluations, incidents


def _like_days_baseline(ref: list[SeriesDay], weekdays: set[int]) -> float:
    """The lower of the reference's level and its level on the same weekdays (when it has any)."""
    level = _rate(ref)
    like = [d for d in ref if d.day.weekday() in weekdays]
    return min(level, _rate(like)) if like else level


def _day_to_day_variance(ref: list[SeriesDay]) -> float:
    """Variance of a day's rate from the successive differences of the reference days (von Neumann:
    mean squared difference / 2), so a slow drift does not count as noise but a series that swings
    from day to day does."""
    rates = [d.rate for d in ref]
    if len(rates) < 2:
        return 0.0
    return sum((b - a) ** 2 for a, b in zip(rates, rates[1:])) / (2 * (len(rates) - 1))


def _event(incident: Incident, day: SeriesDay, event: str, lost: Decimal) -> dict:
    return {"incident_key": incident.incident_key, "day": day.day, "event": event,
            "observed_token_hit_rate": day.rate, "lost_savings_usd": lost}


def rule_incidents(alerts: list[dict], last_complete: date | None, recovery_days: int) -> list[Incident]:
    """Incidents of the daily rules: per (rule, scope), a run of alert days with gaps shorter than
    ``recovery_days`` clean days is one incident, resolved on the ``recovery_days``-th clean complete day.

    ``alerts`` are marts.cache_alerts rows (dicts) sorted by rule, scope and day; days after
    ``last_complete`` are held (ignored until complete). Severity is the worst day's; lost savings sum
    the days' (rules whose figure spans a window, negative_cache_roi, are summed by the caller's SQL).
    """
    incidents: list[Incident] = []
    current: Incident | None = None
    for alert in alerts:
        if last_complete is None or alert["day"] > last_complete:
            continue
        scope = {k: alert[k] for k in SCOPE}
        same = (current is not None and current.rule == alert["rule"] and current.scope == scope
                and (alert["day"] - current.last_day).days <= recovery_days)
        if not same:
            current = Incident(incident_key=incident_key(alert["rule"], scope, alert["day"]), rule=alert["rule"],
                               severity=alert["severity"], scope=scope, opened_day=alert["day"], last_day=alert["day"],
                               baseline=alert["baseline"], observed=alert["observed"],
                               lost_savings_usd=alert["lost_savings_usd"], message=alert["message"],
                               divergence_offset_chars=alert.get("divergence_offset_chars"),
                               divergence_offset_tokens=alert.get("divergence_offset_tokens"))
            current.events.append(_rule_event(current, alert, "opened"))
            incidents.append(current)
            continue
        current.last_day, current.observed, current.message = alert["day"], alert["observed"], alert["message"]
        if alert["severity"] == "critical":
            current.severity = "critical"
        if alert["lost_savings_usd"] is not None:
            current.lost_savings_usd = (current.lost_savings_usd or Decimal(0)) + alert["lost_savings_usd"]
        current.events.append(_rule_event(current, alert, "still_open"))
    for incident in incidents:
        resolved = incident.last_day + timedelta(days=recovery_days)
        if last_complete is not None and resolved <= last_complete:
            incident.resolved_day = resolved
            # the last alert day's message speaks in the present ("now breaks at char 55"): say it is history, after
            # it, so an 'opened' notice posted late (a webhook down, a first build) still opens with what opened
            quiet = f", after {recovery_days} day(s) without an alert" if recovery_days else ""
            incident.message = f"{incident.message} (last seen {incident.last_day}; resolved {resolved}{quiet})"
            incident.events.append({"incident_key": incident.incident_key, "day": resolved, "event": "resolved",
                                    "observed_token_hit_rate": None, "lost_savings_usd": None})
    return incidents


def _rule_event(incident: Incident, alert: dict, event: str) -> dict:
    return {"incident_key": incident.incident_key, "day": alert["day"], "event": event,
            "observed_token_hit_rate": alert["observed"], "lost_savings_usd": alert["lost_savings_usd"]}


def series_message(incident: Incident, cause: dict | None) -> str:
    """The one line of a series incident: since when, how far below its frozen baseline, lost so far, cause."""
    s = incident.scope
    head = f"{s['tenant']}/{s['app']} ({s['provider']} {s['model'] or '?'})"
    lost = incident.lost_savings_usd or Decimal(0)
    if incident.quiet_since is not None:
        state = (f"resolved {incident.resolved_day}: no traffic since {incident.quiet_since} (the app retired or "
                 f"renamed?), hit rate last {incident.observed * 100:.1f}%")
    elif incident.resolved_day is not None:
        state = f"resolved {incident.resolved_day}, hit rate back to {incident.observed * 100:.1f}%"
    else:
        state = f"open since {incident.opened_day}, hit rate now {incident.observed * 100:.1f}%"
    what = cause["cause"] if cause else "token hit rate dropped"
    return (f"{head}: {what}; {state} vs {incident.baseline * 100:.1f}% before {incident.opened_day} "
            f"(frozen baseline); about ${lost:.2f} of savings lost so far")


# ---- the warehouse side: read the evidence, write marts.cache_incidents and its events -------------

ROI_RULE = "negative_cache_roi"


def rebuild(conn, t: Thresholds, lag_hours: float, roi_window_days: int) -> dict:
    """Recompute marts.cache_incidents, marts.cache_incident_events and marts.series_evaluations.

    Reads marts.series_days, marts.cache_alerts and the newest request time of core.usage; an incident
    stored before but not found now gets a ``retracted`` event. Series whose days, complete days and
    thresholds are those recorded in ``stage.incident_series`` are not judged again
    (``_series_incidents``). Run inside the caller's transaction. Returns counts: ``{"open": n,
    "resolved": n, "retracted": n, "last_complete_day": date | None, "judged_series": n,
    "judged_days": n, "kept_series": n}`` (series and series days judged by this run, series kept).
    """
    import pyarrow as pa

    from pipelines.lib.sql import statement

    last_complete = last_complete_day(conn.execute(statement("alerts/incidents__watermark")).fetchone()[0], lag_hours)
    incidents, judged = _series_incidents(conn, t, last_complete, pa)
    cursor = conn.execute(statement("alerts/incidents__rule_alerts"))
    columns = [d[0] for d in cursor.description]
    alerts = [dict(zip(columns, row)) for row in cursor.fetchall()]
    causes = _absorb_causes(incidents, [a for a in alerts if a["rule"] == "rotating_preamble"])
    for incident in incidents:
        cause = causes.get(incident.incident_key)
        if cause:
            incident.rule = cause["rule"]
            incident.severity = "critical"
            incident.divergence_offset_chars = cause["divergence_offset_chars"]
            incident.divergence_offset_tokens = cause["divergence_offset_tokens"]
        incident.message = series_message(incident, cause)
    absorbed = {id(c) for c in causes.values()}
    incidents += rule_incidents([a for a in alerts if id(a) not in absorbed], last_complete, t.recovery_days)

    old = dict(conn.execute(statement("alerts/cache_incidents__keys")).fetchall())
    conn.execute(statement("alerts/cache_incidents__delete"))
    conn.execute(statement("alerts/cache_incident_events__delete_derived"))
    _insert(conn, "alerts/cache_incidents__insert", "incidents_frame", [i.row() for i in incidents], INCIDENT_TYPES, pa)
    _insert(conn, "alerts/cache_incident_events__insert", "events_frame",
            [e for i in incidents for e in i.events], EVENT_TYPES, pa)
    conn.execute(statement("alerts/cache_incidents__update_roi_lost"), {"roi_window_days": roi_window_days})
    kept = {i.incident_key for i in incidents}
    retracted = [{"incident_key": key, "day": day} for key, day in old.items() if key not in kept]
    _insert(conn, "alerts/cache_incident_events__insert_retracted", "retracted_frame", retracted,
            {"incident_key": "string", "day": "date"}, pa)
    return {"open": sum(i.resolved_day is None for i in incidents), "resolved": sum(i.resolved_day is not None for i in incidents),
            "retracted": len(retracted), "last_complete_day": last_complete, **judged}


SERIES = ("provider", "model", "tenant", "app")


def _series_incidents(conn, t: Thresholds, last_complete: date | None, pa) -> tuple[list[Incident], dict]:
    """Every series' hit-rate incidents (before causes are attached), judging only the series whose inputs changed.

    A series' inputs: the digest of its days (``alerts/incidents__series_inputs.sql``), how many are
    complete, the last complete day when some are held (their reason names it) and the thresholds.
    Changed series are judged (``evaluate_series``), their evaluations replaced in
    marts.series_evaluations and their inputs and incidents recorded in stage.incident_series; series
    that no longer have days lose both; the others' incidents are read back from stage.incident_series.
    Returns the incidents in series order and the counts ``judged_series``, ``judged_days``, ``kept_series``.
    """
    from pipelines.lib.sql import statement

    current: dict[tuple, str] = {}
    for provider, model, tenant, app, digest, days, complete in conn.execute(
            statement("alerts/incidents__series_inputs"), {"last_complete": last_complete}).fetchall():
        held_until = last_complete.isoformat() if last_complete is not None and complete < days else ""
        current[(provider, model, tenant, app)] = f"{digest};complete={complete};held_until={held_until};{t!r}"
    recorded = {tuple(row[:4]): row[4:] for row in conn.execute(
        "select provider, model, tenant, app, inputs, incidents_json from stage.incident_series").fetchall()}
    for key, (_, incidents_json) in recorded.items():  # an open incident can resolve quiet without a new day
        if key in current and any(value["resolved_day"] is None for value in json.loads(incidents_json)):
            current[key] += f";open_on={last_complete}"
    if not recorded:  # nothing recorded (a warehouse from before the record was kept): every series is judged anew
        conn.execute(statement("alerts/series_evaluations__delete_all"))
    changed = [key for key, inputs in current.items() if recorded.get(key, (None,))[0] != inputs]
    gone = [key for key in recorded if key not in current]
    keys = pa.table({name: pa.array([key[i] for key in changed + gone], pa.string()) for i, name in enumerate(SERIES)})
    conn.register("series_keys", keys)
    try:
        by_series: dict[tuple, list[SeriesDay]] = {}
        for provider, model, tenant, app, *values in conn.execute(statement("alerts/incidents__series_days")).fetchall():
            by_series.setdefault((provider, model, tenant, app), []).append(SeriesDay(*values))
        conn.execute(statement("alerts/series_evaluations__delete"))
        conn.execute(statement("alerts/incident_series__delete"))
    finally:
        conn.unregister("series_keys")
    evaluations, judged, incidents = [], [], []
    for key in current:
        if key not in by_series:  # unchanged: as judged before
            incidents += [_incident_from_json(value) for value in json.loads(recorded[key][1])]
            continue
        rows, found = evaluate_series(dict(zip(SERIES, key)), by_series[key], last_complete, t)
        for incident in found:
            incident.scope["prefix_family"] = None
        evaluations += rows
        inputs = current[key].split(";open_on=")[0]  # (as the next run computes them: open_on while one is open)
        if any(incident.resolved_day is None for incident in found):
            inputs += f";open_on={last_complete}"
        judged.append({**dict(zip(SERIES, key)), "inputs": inputs,
                       "incidents_json": json.dumps([asdict(i) for i in found], default=_json_value)})
        incidents += found
    _insert(conn, "alerts/series_evaluations__insert", "evaluations_frame", evaluations, EVALUATION_TYPES, pa)
    _insert(conn, "alerts/incident_series__insert", "incident_series_in", judged,
            {**{name: "string" for name in SERIES}, "inputs": "string", "incidents_json": "string"}, pa)
    return incidents, {"judged_series": len(judged), "judged_days": sum(len(by_series[k]) for k in by_series),
                       "kept_series": len(current) - len(judged)}


def _json_value(value):
    """JSON of the values an Incident holds besides JSON's own: exact decimals and dates."""
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    raise TypeError(f"not JSON: {type(value).__name__}")


def _incident_from_json(value: dict) -> Incident:
    """The Incident that ``_json_value`` wrote as ``value`` (floats round-trip exactly through JSON)."""
    def back(v):
        if isinstance(v, dict):
            if set(v) == {"$decimal"}:
                return Decimal(v["$decimal"])
            if set(v) == {"$date"}:
                return date.fromisoformat(v["$date"])
            return {k: back(x) for k, x in v.items()}
        if isinstance(v, list):
            return [back(x) for x in v]
        return v
    return Incident(**back(value))


def _absorb_causes(incidents: list[Incident], rotating: list[dict]) -> dict[str, dict]:
    """The rotating_preamble alert that names each series incident's cause (the first one inside it)."""
    causes: dict[str, dict] = {}
    for alert in rotating:
        for incident in incidents:
            s = incident.scope
            end = incident.resolved_day or incident.last_day
            if ((alert["provider"], alert["model"], alert["tenant"], alert["app"]) == (s["provider"], s["model"], s["tenant"], s["app"])
                    and incident.opened_day - timedelta(days=1) <= alert["day"] <= end
                    and incident.incident_key not in causes):
                causes[incident.incident_key] = alert
                break
    return causes


DEC = "decimal"
INCIDENT_TYPES = {"incident_key": "string", "rule": "string", "severity": "string", "provider": "string", "model": "string",
                  "tenant": "string", "app": "string", "prefix_family": "string", "opened_day": "date", "last_day": "date",
                  "resolved_day": "date", "status": "string", "baseline_token_hit_rate": "double",
                  "observed_token_hit_rate": "double", "lost_savings_usd": DEC, "message": "string",
                  "divergence_offset_chars": "int64", "divergence_offset_tokens": "int64"}
EVENT_TYPES = {"incident_key": "string", "day": "date", "event": "string", "observed_token_hit_rate": "double",
               "lost_savings_usd": DEC}
EVALUATION_TYPES = {"day": "date", "provider": "string", "model": "string", "tenant": "string", "app": "string",
                    "status": "string", "reason": "string", "pooled_days": "int32", "requests": "int64",
                    "observed": "double", "baseline": "double", "threshold": "double", "incident_key": "string"}


def _insert(conn, sql_name: str, frame_name: str, rows: list[dict], types: dict, pa) -> None:
    """Insert ``rows`` through the statement ``sql_name``, which reads them as the relation ``frame_name``."""
    from pipelines.lib.sql import statement

    arrow_types = {"string": pa.string(), "date": pa.date32(), "double": pa.float64(), "int64": pa.int64(),
                   "int32": pa.int32(), DEC: pa.decimal128(38, 15)}
    schema = pa.schema([(name, arrow_types[kind]) for name, kind in types.items()])
    table = pa.Table.from_pylist([{k: r.get(k) for k in types} for r in rows], schema=schema)
    conn.register(frame_name, table)
    try:
        conn.execute(statement(sql_name))
    finally:
        conn.unregister(frame_name)
