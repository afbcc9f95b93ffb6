"""The delivery contract of incident notices against a local receiver: slow, dying and absent
receivers, resolve and retraction notices, the first-enable window and the four payload formats."""

import json
import threading
import time
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import duckdb
import pytest

from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import incidents, webhook
from tests.conftest import run_pipeline
from tests.defs.test_pipeline import hit_rate_logs
from tests.lib.test_webhook import copy_of, serve


class Receiver:
    """A receiver that dedupes on the Idempotency-Key header, like a well-behaved one; ``mode``: ok,
    slow (answers after the client gave up), die (reads the post, closes without answering)."""

    def __init__(self, mode="ok"):
        self.mode, self.received, self.accepted = mode, [], {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers["Idempotency-Key"]
                receiver.received.append(key)
                receiver.accepted.setdefault(key, body)
                if receiver.mode == "die":
                    receiver.mode = "ok"
                    self.close_connection = True
                    self.connection.close()
                    return
                if receiver.mode == "slow":
                    receiver.mode = "ok"
                    time.sleep(1.5)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class Answering:
    """A receiver that answers every post with ``status`` (which a test may change) and counts the posts."""

    def __init__(self, status: int):
        self.status, self.posts = status, 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                receiver.posts += 1
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("contract")
    hit_rate_logs(tmp / "logs", broken_from=date(2026, 11, 8))
    return run_pipeline(tmp, tmp / "logs")


FAST = webhook.DeliveryOptions(timeout_seconds=0.5, max_attempts=3)


def notices(conn):
    return conn.execute("select notice, status, attempt from marts.alert_deliveries order by attempted_at, attempt").fetchall()


@pytest.mark.parametrize("mode", ["slow", "die"])
def test_a_slow_or_dying_receiver_gets_each_notice_once_by_its_idempotency_key(warehouse, tmp_path, mode):
    db = copy_of(warehouse, tmp_path)
    receiver = Receiver(mode)
    try:
        with duckdb.connect(str(db)) as conn:
            first = webhook.deliver_pending(conn, receiver.url, options=FAST)
            second = webhook.deliver_pending(conn, receiver.url, options=FAST)
            third = webhook.deliver_pending(conn, receiver.url, options=FAST)
            recorded = notices(conn)
    finally:
        receiver.close()
    assert (first.failed, second.delivered, third.delivered) == (1, 1, 0)
    assert len(receiver.received) == 2 and len(set(receiver.received)) == 1  # the repeat carries the same key
    assert len(receiver.accepted) == 1 and recorded == [("opened", "failed", 1), ("opened", "delivered", 2)]


def test_a_receiver_down_for_many_nights_keeps_its_notices_due_then_gets_opened_and_resolved(warehouse, tmp_path):
    """A break test: each notice was given up after max_attempts attempts of any kind, so an outage of two nights
    (three attempts a night) dead-lettered the incident for good, the runs after it went green while the webhook
    was still down, and nothing was posted when it came back (README: "a webhook that stays down ends the run with
    an error ... the next run posts what is left"). A webhook that is down keeps every notice due."""
    db = copy_of(warehouse, tmp_path)
    down = "http://127.0.0.1:9/hook"  # discard port: connection refused
    with duckdb.connect(str(db)) as conn:
        nights = [webhook.deliver_pending(conn, down, options=FAST) for _ in range(5)]  # max_attempts is 3
        assert [(n.failed, n.dead_letter) for n in nights] == [(1, 0)] * 5
        assert nights[-1].last_error == "ConnectionRefusedError: Connection refused"
        assert notices(conn)[-1] == ("opened", "failed", 5)
        conn.execute("update marts.cache_incidents set status = 'resolved', resolved_day = date '2026-11-10'")
        receiver = Receiver()
        try:
            back = webhook.deliver_pending(conn, receiver.url, options=FAST)
            again = webhook.deliver_pending(conn, receiver.url, options=FAST)
        finally:
            receiver.close()
    assert (back.delivered, back.failed, again.delivered) == (2, 0, 0)
    assert [k.split(":")[1] for k in receiver.received] == ["opened", "resolved"]
    resolved = receiver.accepted[receiver.received[1]]
    assert resolved["status"] == "resolved" and resolved["endsAt"] == "2026-11-10T00:00:00Z"


@pytest.mark.parametrize("code, given_up", [(422, True), (400, True), (500, False), (404, False), (429, False)])
def test_only_a_notice_the_webhook_refuses_as_a_request_is_given_up(warehouse, tmp_path, code, given_up):
    """A body the receiver rejects (400, 422: no later attempt changes it) is dead-lettered after max_attempts, so it
    cannot fail every night; an unavailable or misconfigured webhook (5xx, 404, 429) keeps the notice due."""
    db = copy_of(warehouse, tmp_path)
    receiver = Answering(code)
    try:
        with duckdb.connect(str(db)) as conn:
            passes = [webhook.deliver_pending(conn, receiver.url, options=FAST) for _ in range(4)]
            recorded = notices(conn)
    finally:
        receiver.server.shutdown()
    if given_up:
        assert [(p.failed, p.dead_letter) for p in passes] == [(1, 0), (1, 0), (0, 1), (0, 0)]
        assert recorded[-1] == ("opened", "dead_letter", 3) and receiver.posts == 3
    else:
        assert [(p.failed, p.dead_letter) for p in passes] == [(1, 0)] * 4
        assert recorded[-1] == ("opened", "failed", 4) and receiver.posts == 4


def test_a_rebuild_that_drops_a_delivered_incident_sends_a_retraction(warehouse, tmp_path):
    db = copy_of(warehouse, tmp_path)
    receiver = Receiver()
    try:
        with duckdb.connect(str(db)) as conn:
            webhook.deliver_pending(conn, receiver.url, options=FAST)
            conn.execute("delete from marts.series_days where day >= '2026-11-08'")  # as if late data removed the drop
            counts = incidents.rebuild(conn, CachemeterSettings().incident_thresholds(), 1.0, 7)
            webhook.deliver_pending(conn, receiver.url, options=FAST)
            webhook.deliver_pending(conn, receiver.url, options=FAST)
    finally:
        receiver.close()
    assert counts["retracted"] == 1
    assert [k.split(":")[1] for k in receiver.received] == ["opened", "retracted"]
    assert receiver.accepted[receiver.received[1]]["retracted"] is True


def test_first_enable_posts_only_open_or_recent_incidents(warehouse, tmp_path):
    db = copy_of(warehouse, tmp_path)
    receiver = Receiver()
    try:
        with duckdb.connect(str(db)) as conn:
            # an old, resolved incident of last month: history, not news
            conn.execute("insert into marts.cache_incidents (incident_key, rule, severity, opened_day, last_day, resolved_day, status) "
                         "values ('old', 'hit_rate_drop', 'warning', date '2026-10-01', date '2026-10-02', date '2026-10-04', 'resolved')")
            report = webhook.deliver_pending(conn, receiver.url, options=FAST)
    finally:
        receiver.close()
    assert report.delivered == 1 and not any(k.startswith("old:") for k in receiver.received)


NOTICE = {"incident_key": "abc123abc123abc123", "notice": "opened", "rule": "hit_rate_drop", "severity": "critical",
          "provider": "openai", "model": "gpt-4.1", "tenant": "acme", "app": "bot", "prefix_family": None,
          "opened_day": date(2026, 11, 8), "last_day": date(2026, 11, 9), "resolved_day": None,
          "lost_savings_usd": None, "message": "acme/bot: token hit rate dropped"}


def test_pagerduty_and_alertmanager_payloads_tie_trigger_and_resolve():
    pd_open = webhook.payload(NOTICE, webhook.DeliveryOptions(format="pagerduty", routing_key="R"))
    resolved = {**NOTICE, "notice": "resolved", "resolved_day": date(2026, 11, 11)}
    pd_resolve = webhook.payload(resolved, webhook.DeliveryOptions(format="pagerduty", routing_key="R"))
    assert (pd_open["event_action"], pd_resolve["event_action"]) == ("trigger", "resolve")
    assert pd_open["dedup_key"] == pd_resolve["dedup_key"] == "abc123abc123abc123" and pd_open["routing_key"] == "R"
    assert pd_open["payload"]["severity"] == "critical" and pd_open["payload"]["source"] == "cachemeter"
    am = webhook.payload(resolved, webhook.DeliveryOptions(format="alertmanager"))
    assert am["version"] == "4" and am["status"] == "resolved" and am["alerts"][0]["endsAt"] == "2026-11-11T00:00:00Z"
    assert am["alerts"][0]["labels"]["alertname"] == "cachemeter_hit_rate_drop"
    assert webhook.payload(NOTICE, webhook.DeliveryOptions(format="slack")) == {
        "text": "[critical] hit_rate_drop opened: acme/bot: token hit rate dropped"}
    with pytest.raises(ValueError, match="unknown delivery format"):
        webhook.payload(NOTICE, webhook.DeliveryOptions(format="teams"))


def test_an_incident_opened_again_after_its_resolution_went_out_is_announced_each_cycle(warehouse, tmp_path):
    """A break test: late data re-opened an incident whose resolution was delivered (its resolved event gone, the
    same incident key open again), and nothing was posted, then nothing when it resolved again: the receiver kept
    "resolved" while the warehouse showed it open and critical for days. Each cycle now gets reopened:<n> (firing)
    and resolved:<n>, each posted once under its own Idempotency-Key."""
    db = copy_of(warehouse, tmp_path)
    receiver = Receiver()

    def resolve(conn):
        conn.execute("update marts.cache_incidents set status = 'resolved', resolved_day = date '2026-11-10'")

    def reopen(conn):
        conn.execute("update marts.cache_incidents set status = 'open', resolved_day = null")

    try:
        with duckdb.connect(str(db)) as conn:
            passes = [webhook.deliver_pending(conn, receiver.url, options=FAST).delivered]
            for change in (resolve, reopen, reopen, resolve, reopen):  # the second reopen changes nothing
                change(conn)
                passes.append(webhook.deliver_pending(conn, receiver.url, options=FAST).delivered)
            recorded = notices(conn)
    finally:
        receiver.close()
    assert passes == [1, 1, 1, 0, 1, 1]
    assert [k.split(":", 1)[1] for k in receiver.received] == ["opened", "resolved", "reopened:2", "resolved:2",
                                                                "reopened:3"]
    bodies = [receiver.accepted[k] for k in receiver.received]
    assert [(b["notice"], b["cycle"], b["status"]) for b in bodies] == [
        ("opened", 1, "firing"), ("resolved", 1, "resolved"), ("reopened", 2, "firing"), ("resolved", 2, "resolved"),
        ("reopened", 3, "firing")]
    assert "opened again (later data shows it after its resolution)" in bodies[2]["text"]
    assert [r[:2] for r in recorded] == [(n, "delivered") for n in ("opened", "resolved", "reopened:2", "resolved:2",
                                                                     "reopened:3")]


def test_an_outage_before_a_refusal_does_not_count_toward_giving_a_notice_up(warehouse, tmp_path):
    """A break test: after two nights of 503 (six failed attempts), one 400 dead-lettered the incident's opening at
    once, and it was never announced; only refusals of the request count toward max_attempts."""
    db = copy_of(warehouse, tmp_path)
    receiver = Answering(503)
    try:
        with duckdb.connect(str(db)) as conn:
            outage = [webhook.deliver_pending(conn, receiver.url, options=FAST) for _ in range(4)]  # max_attempts is 3
            receiver.status = 400
            refused = [webhook.deliver_pending(conn, receiver.url, options=FAST) for _ in range(3)]
            receiver.status = 200
            back = webhook.deliver_pending(conn, receiver.url, options=FAST)
            recorded = notices(conn)
    finally:
        receiver.server.shutdown()
    assert [(p.failed, p.dead_letter) for p in outage] == [(1, 0)] * 4
    assert [(p.failed, p.dead_letter) for p in refused] == [(1, 0), (1, 0), (0, 1)]  # the third refusal gives up
    assert (back.delivered, back.failed) == (0, 0) and receiver.posts == 7  # given up: not posted again
    assert [r[1:] for r in recorded] == [("failed", n) for n in range(1, 7)] + [("dead_letter", 7)]


def test_a_cycle_that_reopened_and_resolved_while_the_webhook_was_down_is_posted_reopened_then_resolved(
        warehouse, tmp_path):
    """A break test: late data re-opened an incident whose resolution had gone out, the webhook was down, and the
    incident resolved again before it came back: reopened:<n> was no longer due (the incident was not open) and
    resolved:<n> not yet (no reopening delivered), so the receiver never learned of the cycle."""
    db = copy_of(warehouse, tmp_path)
    receiver = Receiver()
    down = "http://127.0.0.1:9/hook"
    try:
        with duckdb.connect(str(db)) as conn:
            webhook.deliver_pending(conn, receiver.url, options=FAST)  # opened
            conn.execute("update marts.cache_incidents set status = 'resolved', resolved_day = date '2026-11-10'")
            webhook.deliver_pending(conn, receiver.url, options=FAST)  # resolved
            conn.execute("update marts.cache_incidents set status = 'open', resolved_day = null")
            outage = webhook.deliver_pending(conn, down, options=FAST)  # reopened:2 fails
            conn.execute("update marts.cache_incidents set status = 'resolved', resolved_day = date '2026-11-12'")
            still = webhook.deliver_pending(conn, down, options=FAST)  # still down: reopened:2 due, resolved:2 waits
            back = webhook.deliver_pending(conn, receiver.url, options=FAST)
            after = webhook.deliver_pending(conn, receiver.url, options=FAST)
    finally:
        receiver.close()
    assert (outage.failed, still.failed, still.deferred) == (1, 1, 1)
    assert (back.delivered, after.delivered) == (2, 0)
    assert [k.split(":", 1)[1] for k in receiver.received] == ["opened", "resolved", "reopened:2", "resolved:2"]
