"""The incident lifecycle judges again only the series whose evidence changed (lib/incidents.py)."""

import random
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import duckdb

from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import incidents, warehouse

FIRST = date(2026, 10, 1)
DAYS = 40
# app -> (requests a day, token hit rate on day n): a drop that recovers, one still open at the end,
# a steady series, a thin one (never enough requests to judge)
SERIES = {
    "drop": (200, lambda n: 0.2 if 20 <= n < 25 else 0.8),
    "open": (150, lambda n: 0.1 if n >= 34 else 0.7),
    "steady": (120, lambda n: 0.5),
    "thin": (3, lambda n: 0.6),
}


def add_day(conn, app: str, n: int, rng: random.Random) -> None:
    requests, rate = SERIES[app]
    prompt = requests * 3000
    read = int(prompt * min(max(rate(n) + rng.uniform(-0.03, 0.03), 0), 1))
    conn.execute("insert into marts.series_days (day, provider, model, tenant, app, requests, prompt_tokens, "
                 "cache_read_tokens, read_discount_usd) values ($day, 'openai', $model, 't', $app, $r, $p, $c, $usd)",
                 {"day": FIRST + timedelta(days=n), "model": None if app == "steady" else "gpt-4.1", "app": app,
                  "r": requests, "p": prompt, "c": read, "usd": Decimal(prompt) * Decimal("0.0000015")})


def watermark(conn, n: int) -> None:
    """The logs' newest request: noon of day n (so day n - 1 is the last complete one)."""
    conn.execute("delete from core.usage")
    conn.execute("insert into core.usage (ts, day) values ($ts, $day)",
                 {"ts": datetime(FIRST.year, FIRST.month, FIRST.day, 12, tzinfo=timezone.utc) + timedelta(days=n),
                  "day": FIRST + timedelta(days=n)})


def stored(conn) -> dict:
    return {"incidents": conn.execute("select * from marts.cache_incidents order by all").fetchall(),
            "events": conn.execute("select * exclude (recorded_at) from marts.cache_incident_events order by all").fetchall(),
            "evaluations": conn.execute("select * from marts.series_evaluations order by all").fetchall()}


def rebuild(conn) -> dict:
    return incidents.rebuild(conn, CachemeterSettings().incident_thresholds(), 1.0, 7)


def test_a_second_pass_over_unchanged_evidence_judges_no_series_and_equals_a_full_recompute(tmp_path):
    rng = random.Random(5)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    for app in SERIES:
        for n in range(DAYS):
            add_day(conn, app, n, rng)
    watermark(conn, DAYS - 3)  # the last three days are held: their reason names the last complete day
    # a rotating preamble found on the drop's first day: the drop's incident takes it as its cause
    conn.execute("insert into marts.cache_alerts (day, rule, severity, provider, model, tenant, app, observed, baseline, "
                 "message, divergence_offset_chars, divergence_offset_tokens) values ($d, 'rotating_preamble', 'critical', "
                 "'openai', 'gpt-4.1', 't', 'drop', 0.2, 0.8, 'rotating preamble', 1200, 300)",
                 {"d": FIRST + timedelta(days=20)})

    first = rebuild(conn)
    assert (first["judged_series"], first["judged_days"], first["kept_series"]) == (4, 4 * DAYS, 0)
    once = stored(conn)
    assert conn.execute("select rule, app, opened_day, resolved_day from marts.cache_incidents order by app").fetchall() == [
        ("rotating_preamble", "drop", FIRST + timedelta(days=20), FIRST + timedelta(days=26)),
        ("hit_rate_drop", "open", FIRST + timedelta(days=34), None)]
    assert conn.execute("select count(*) from marts.series_evaluations where status = 'held'").fetchall() == [(4 * 3,)]

    second = rebuild(conn)  # nothing changed: no series is judged, every stored row stays as it was
    assert (second["judged_series"], second["judged_days"], second["kept_series"]) == (0, 0, 4)
    assert (second["open"], second["resolved"], second["retracted"]) == (first["open"], first["resolved"], 0)
    assert stored(conn) == once

    # the logs move on a day: every series had held days, so each is judged again
    watermark(conn, DAYS - 2)
    assert rebuild(conn)["judged_series"] == 4
    # a new day of one series alone, the logs past it: only that series is judged again, and the series with an
    # open incident (it may resolve quiet as the days pass without its traffic)
    watermark(conn, DAYS + 1)
    rebuild(conn)
    add_day(conn, "steady", DAYS, rng)
    watermark(conn, DAYS + 2)
    counts = rebuild(conn)
    assert (counts["judged_series"], counts["judged_days"], counts["kept_series"]) == (2, DAYS + 1 + DAYS, 2)
    incremental = stored(conn)

    conn.execute("delete from stage.incident_series")  # forget what was judged: a full recompute
    full = rebuild(conn)
    assert full["judged_series"] == 4 and full["retracted"] == 0
    assert stored(conn) == incremental


def test_tied_rule_alerts_of_one_scope_and_day_give_the_same_incident_whatever_their_stored_order(tmp_path):
    # found by a break test: two data_quality alerts of one day (same rule and scope) tied in the order the incidents
    # read them, so the incident's message and observed value came from whichever was stored last
    alerts = [("quarantined share 3.0% of 200 records", 0.03, "a1"), ("2 records with an unknown usage key", 2.0, "a2")]
    built = []
    for order in (alerts, alerts[::-1]):
        conn = warehouse.prepare(duckdb.connect(":memory:"))
        watermark(conn, 5)
        for message, observed, alert_id in order:
            conn.execute("insert into marts.cache_alerts (alert_id, day, rule, severity, observed, message) "
                         "values ($id, $day, 'data_quality', 'warning', $observed, $message)",
                         {"id": alert_id, "day": FIRST + timedelta(days=1), "observed": observed, "message": message})
        rebuild(conn)
        built.append(conn.execute("select * from marts.cache_incidents").fetchall())
    assert built[0] == built[1]
    assert len(built[0]) == 1 and built[0][0][1] == "data_quality"


def test_a_resolved_rule_incident_says_so_after_its_last_alert_days_message():
    # a rule's message speaks of its alert day ("now breaks at char 55"); once resolved, the incident's message
    # kept that present tense under status resolved, and the resolved notice posted it. The resolution follows the
    # message, so an 'opened' notice posted after it resolved still opens with what opened
    def alert(day):
        return {"rule": "rotating_preamble", "provider": "anthropic", "model": "claude-sonnet-4-5", "tenant": "t",
                "app": "bot", "prefix_family": "series:1", "day": day, "severity": "warning", "baseline": 0.9,
                "observed": 0.1, "lost_savings_usd": Decimal("1.5"), "message": f"the opening now breaks at char 55 ({day})"}

    found = incidents.rule_incidents([alert(date(2026, 11, 2)), alert(date(2026, 11, 3))], date(2026, 11, 6), 3)
    assert [i.message for i in found] == ["the opening now breaks at char 55 (2026-11-03) (last seen 2026-11-03; "
                                          "resolved 2026-11-06, after 3 day(s) without an alert)"]
    immediate = incidents.rule_incidents([alert(date(2026, 11, 2))], date(2026, 11, 6), 0)  # recovery_days 0
    assert immediate[0].message.endswith("(last seen 2026-11-02; resolved 2026-11-02)")
    still_open = incidents.rule_incidents([alert(date(2026, 11, 2)), alert(date(2026, 11, 3))], date(2026, 11, 5), 3)
    assert [i.message for i in still_open] == ["the opening now breaks at char 55 (2026-11-03)"]
    assert still_open[0].resolved_day is None and found[0].resolved_day == date(2026, 11, 6)


def test_an_open_series_incident_resolves_when_its_series_sends_no_traffic_for_quiet_days(tmp_path):
    """A break test: an app retired (or renamed) while its hit-rate incident was open kept it open for good, "hit rate
    now 0.0%" night after night, with no way to close it. No traffic for quiet_days (7) complete days resolves it on
    the last of them, and the nightly runs judge the quiet series again though none of its days changed."""
    rng = random.Random(7)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    for n in range(DAYS):  # "open": its incident opens on day 34, and day 39 is its last traffic
        add_day(conn, "open", n, rng)
    last = FIRST + timedelta(days=DAYS - 1)
    for n in range(DAYS, DAYS + 8):  # nightly runs, the logs (other apps') moving on a day at a time
        watermark(conn, n + 1)  # day n complete
        rebuild(conn)
        got = conn.execute("select status, resolved_day, message from marts.cache_incidents").fetchall()
        quiet_days = (FIRST + timedelta(days=n) - last).days
        if quiet_days < 7:
            assert [g[:2] for g in got] == [("open", None)], n
        else:
            assert [g[:2] for g in got] == [("resolved", last + timedelta(days=7))], n
            assert f"resolved {last + timedelta(days=7)}: no traffic since {last + timedelta(days=1)}" in got[0][2]
    events = conn.execute("select day, event from marts.cache_incident_events where event = 'resolved'").fetchall()
    assert events == [(last + timedelta(days=7), "resolved")]
    incremental = stored(conn)
    conn.execute("delete from stage.incident_series")  # a one-go recompute gives the same
    rebuild(conn)
    assert stored(conn) == incremental
