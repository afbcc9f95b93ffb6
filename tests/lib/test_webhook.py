"""Alert delivery (lib/webhook.py and the marts/alert_deliveries asset) against a real HTTP server on 127.0.0.1."""

import json
import logging
import threading
import time
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dagster as dg
import duckdb
import pytest

from tests.conftest import run_pipeline
from tests.defs.test_pipeline import hit_rate_logs


class Receiver:
    """A local webhook endpoint that fails the first ``failures`` posts with HTTP 500 (each answer after ``delay`` s)."""

    def __init__(self, failures: int = 0, delay: float = 0):
        self.failures, self.bodies, self.calls, self.keys = failures, [], 0, []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                receiver.calls += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(delay)
                if receiver.calls <= receiver.failures:
                    self.send_response(500)
                else:
                    receiver.bodies.append(body)
                    receiver.keys.append(self.headers["Idempotency-Key"])
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/SECRET-TOKEN-123"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """``handler`` served on 127.0.0.1 (a free port) from a daemon thread; ``shutdown()`` stops it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def warehouse_with_alerts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("alerts")
    hit_rate_logs(tmp / "logs", broken_from=date(2026, 11, 8))
    return run_pipeline(tmp, tmp / "logs")


def copy_of(db, tmp_path):
    target = tmp_path / "w.duckdb"
    target.write_bytes(db.read_bytes())
    return target


def test_each_notice_is_posted_once_across_two_passes(warehouse_with_alerts, tmp_path):
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver()
    try:
        with duckdb.connect(str(db)) as conn:
            first = webhook.deliver_pending(conn, receiver.url)
            second = webhook.deliver_pending(conn, receiver.url)
            alerts = conn.execute("select count(*) from marts.cache_alerts").fetchall()[0][0]
    finally:
        receiver.close()
    # three daily hit_rate_drop rows, one incident: one notice
    assert alerts == 3 and (first.delivered, second.delivered) == (1, 0)
    (body,) = receiver.bodies
    assert body["status"] == "firing" and body["startsAt"] == "2026-11-08T00:00:00Z" and body["endsAt"] is None
    assert body["labels"] == {"rule": "hit_rate_drop", "severity": "critical", "provider": "openai", "model": "gpt-4.1",
                              "tenant": "acme", "app": "bot"}
    assert body["text"].startswith("[critical] hit_rate_drop opened: acme/bot (openai gpt-4.1): token hit rate dropped; open since 2026-11-08")
    assert receiver.keys == [f"{body['incident_key']}:opened"]


def test_a_failing_post_is_tried_again_on_the_next_pass_without_duplicates(warehouse_with_alerts, tmp_path):
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver(failures=1)  # the first post answers HTTP 500
    try:
        with duckdb.connect(str(db)) as conn:
            first = webhook.deliver_pending(conn, receiver.url)
            second = webhook.deliver_pending(conn, receiver.url)
            third = webhook.deliver_pending(conn, receiver.url)
            attempts = conn.execute("select alert_id, notice, attempt, status, http_status, error from marts.alert_deliveries "
                                    "order by attempted_at, attempt").fetchall()
    finally:
        receiver.close()
    assert (first.delivered, first.failed) == (0, 1) and (second.delivered, second.failed) == (1, 0) and third.delivered == 0
    assert len(receiver.bodies) == 1
    assert [(a[1], a[2], a[3]) for a in attempts] == [("opened", 1, "failed"), ("opened", 2, "delivered")]
    assert attempts[0][0] == attempts[1][0] and attempts[0][4] == 500
    assert all("SECRET-TOKEN" not in (a[5] or "") for a in attempts)


def resolved_while_the_webhook_was_down(conn):
    """The incident of warehouse_with_alerts, as if it had resolved on 2026-11-10 before any notice went out."""
    conn.execute("update marts.cache_incidents set status = 'resolved', resolved_day = date '2026-11-10'")


def test_an_incident_opened_and_resolved_during_an_outage_is_posted_opened_then_resolved(warehouse_with_alerts, tmp_path):
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver(failures=1)  # the outage's last failed post
    try:
        with duckdb.connect(str(db)) as conn:
            resolved_while_the_webhook_was_down(conn)
            first = webhook.deliver_pending(conn, receiver.url)
            second = webhook.deliver_pending(conn, receiver.url)
            third = webhook.deliver_pending(conn, receiver.url)
    finally:
        receiver.close()
    # the opening failed, so the resolution waited for it (a receiver never sees resolved before firing) ...
    assert (first.delivered, first.failed, first.deferred) == (0, 1, 1)
    # ... and both went out on the next pass, in order; before, only 'opened' (firing) was posted for an
    # incident already resolved, and the resolution one pass later
    assert (second.delivered, third.delivered) == (2, 0)
    assert [(b["status"], b["endsAt"] is None) for b in receiver.bodies] == [("firing", True), ("resolved", False)]
    assert [k.rsplit(":", 1)[1] for k in receiver.keys] == ["opened", "resolved"]


def test_a_notice_tried_during_an_outage_stays_due_when_later_days_move_the_window_on(warehouse_with_alerts, tmp_path):
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver(failures=1)
    try:
        with duckdb.connect(str(db)) as conn:
            resolved_while_the_webhook_was_down(conn)
            first = webhook.deliver_pending(conn, receiver.url)  # the opening fails: one attempt recorded
            # several days arrive together after the outage: the incident is now older than the window
            conn.execute("insert into core.usage select * replace (day + 30 as day, request_id || '-later' as request_id) "
                         "from core.usage")
            second = webhook.deliver_pending(conn, receiver.url)
    finally:
        receiver.close()
    assert (first.failed, second.delivered) == (1, 2)  # before, nothing was posted again, and nothing said so
    assert [k.rsplit(":", 1)[1] for k in receiver.keys] == ["opened", "resolved"]


def test_incidents_a_year_older_than_the_newest_usage_are_not_announced(warehouse_with_alerts, tmp_path):
    # a new warehouse built from old logs delivers after each day range: the first ranges are old, and an
    # incident open at that point (its later days not built yet) was announced, measured against itself
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver()
    try:
        with duckdb.connect(str(db)) as conn:
            conn.execute("insert into marts.cache_incidents select * replace ("
                         "md5('old' || incident_key) as incident_key, opened_day - 365 as opened_day, "
                         "last_day - 365 as last_day) from marts.cache_incidents")
            conn.execute("insert into marts.cache_incidents select * replace ("
                         "md5('older' || incident_key) as incident_key, opened_day - 400 as opened_day, "
                         "last_day - 400 as last_day, 'resolved' as status, last_day - 399 as resolved_day) "
                         "from marts.cache_incidents where incident_key not like 'old%' limit 1")
            assert conn.execute("select count(*) from marts.cache_incidents").fetchall() == [(3,)]
            report = webhook.deliver_pending(conn, receiver.url)
    finally:
        receiver.close()
    assert report.delivered == 1
    assert [b["startsAt"] for b in receiver.bodies] == ["2026-11-08T00:00:00Z"]


def test_the_delivery_asset_posts_once_retries_through_its_policy_and_keeps_the_url_out(
        warehouse_with_alerts, tmp_path, monkeypatch):
    from dagster_duckdb import DuckDBResource

    from pipelines.defs.alerts.assets import alert_deliveries
    from pipelines.defs.settings import CachemeterSettings

    db = copy_of(warehouse_with_alerts, tmp_path)
    resources = {"duckdb": DuckDBResource(database=str(db)), "settings": CachemeterSettings()}
    monkeypatch.delenv("CACHEMETER_WEBHOOK_URL", raising=False)
    skipped = dg.materialize([alert_deliveries], resources=resources, instance=dg.DagsterInstance.ephemeral())
    (materialization,) = skipped.asset_materializations_for_node("marts__alert_deliveries")
    assert "set CACHEMETER_WEBHOOK_URL" in materialization.metadata["webhook"].value
    assert alert_deliveries.op.retry_policy.max_retries == 2  # Dagster retries a failing pass, not a loop of ours
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    try:
        result = dg.materialize([alert_deliveries], resources=resources, instance=dg.DagsterInstance.ephemeral())
    finally:
        receiver.close()
    (materialization,) = result.asset_materializations_for_node("marts__alert_deliveries")
    assert materialization.metadata["delivered"].value == 1 and len(receiver.bodies) == 1
    assert "SECRET-TOKEN" not in str(materialization.metadata) and b"SECRET-TOKEN" not in db.read_bytes()


# ---- the URL is a secret: never in an error, a log line or the warehouse ----------------------

TOKEN = "SECRET-TOKEN-123"


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


MALFORMED = [f"hooks.example/services/T/B/{TOKEN}", f"http://[hooks.example/services/{TOKEN}",
             f"http://127.0.0.1:99999/services/{TOKEN}", f"https:///services/{TOKEN}",
             f"http://127.0.0.1:8080/ho ok/{TOKEN}"]  # a space inside: every post fails as InvalidURL


def everything_said(exc: BaseException) -> str:
    """The exception as Dagster and a traceback would render it: message, repr, chained exceptions, frames."""
    import traceback

    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(exc.__context__) + repr(exc.__cause__)


@pytest.mark.parametrize("url", MALFORMED + [f"http://127.0.0.1:{{port}}/services/{TOKEN}\n",
                                              f"http://127.0.0.1:{{port}}/services/T/B/{TOKEN}"])
def test_post_json_never_puts_the_url_in_its_error(url, caplog):
    from pipelines.lib import webhook

    caplog.set_level(logging.DEBUG)
    url = url.replace("{port}", str(closed_port()))
    with pytest.raises(webhook.DeliveryError) as raised:
        webhook.post_json(url, {"text": "hello"}, timeout_seconds=2)
    assert TOKEN not in everything_said(raised.value) and "127.0.0.1" not in str(raised.value)
    assert raised.value.__context__ is None and raised.value.__cause__ is None
    assert TOKEN not in caplog.text


@pytest.mark.parametrize("url", MALFORMED[:1])
def test_a_malformed_url_fails_delivery_once_without_the_url_or_any_attempt(warehouse_with_alerts, tmp_path, caplog, url):
    from pipelines.lib import webhook

    caplog.set_level(logging.DEBUG)
    db = copy_of(warehouse_with_alerts, tmp_path)
    with duckdb.connect(str(db)) as conn:
        with pytest.raises(webhook.DeliveryError, match="the webhook URL is malformed") as raised:
            webhook.deliver_pending(conn, url)
        assert conn.execute("select count(*) from marts.alert_deliveries").fetchall() == [(0,)]
    assert TOKEN not in everything_said(raised.value) and TOKEN not in caplog.text
    assert TOKEN.encode() not in db.read_bytes()


def test_an_unreachable_valid_url_is_recorded_as_failed_without_the_url(warehouse_with_alerts, tmp_path, caplog):
    from pipelines.lib import webhook

    caplog.set_level(logging.DEBUG)
    db = copy_of(warehouse_with_alerts, tmp_path)
    url = f"http://127.0.0.1:{closed_port()}/services/T/B/{TOKEN}"
    with duckdb.connect(str(db)) as conn:
        report = webhook.deliver_pending(conn, url)
        errors = conn.execute("select distinct status, error from marts.alert_deliveries").fetchall()
    assert (report.delivered, report.failed) == (0, 1)
    assert errors == [("failed", "ConnectionRefusedError: Connection refused")]
    assert TOKEN not in caplog.text and TOKEN.encode() not in db.read_bytes()


@pytest.mark.parametrize("url", [MALFORMED[0], f"http://127.0.0.1:{{port}}/services/T/B/{TOKEN}"])
def test_the_delivery_asset_keeps_a_malformed_or_valid_url_out_of_its_run(warehouse_with_alerts, tmp_path, monkeypatch,
                                                                          caplog, url):
    from dagster_duckdb import DuckDBResource

    from pipelines.defs.alerts.assets import DELIVERY_RETRY, build_alert_deliveries
    from pipelines.defs.settings import CachemeterSettings

    caplog.set_level(logging.DEBUG)
    db = copy_of(warehouse_with_alerts, tmp_path)
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", url.replace("{port}", str(closed_port())))
    instance = dg.DagsterInstance.ephemeral()
    # the asset's own retries, without their 10 and 20 s of waiting: each attempt's failure is in the run's events
    retries = dg.RetryPolicy(max_retries=DELIVERY_RETRY.max_retries, delay=0)
    result = dg.materialize([build_alert_deliveries(retries)], instance=instance, raise_on_error=False,
                            resources={"duckdb": DuckDBResource(database=str(db)), "settings": CachemeterSettings()})
    assert not result.success  # nothing delivered: the step fails (and Dagster retries it), saying why
    said = "".join(str(e) for e in instance.all_logs(result.run_id))  # what the run's event log stores
    # a failed post is retried by the policy, each retry's event holding its error; a malformed URL is not retried
    assert said.count("STEP_UP_FOR_RETRY") == (0 if url == MALFORMED[0] else DELIVERY_RETRY.max_retries)
    assert "not delivered (0 delivered" in said or "malformed" in said
    assert TOKEN not in said and TOKEN not in caplog.text
    assert TOKEN.encode() not in db.read_bytes()


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_webhook_that_redirects_is_a_failed_attempt_not_a_delivery(code):
    """A break test: urllib answers a 301, 302 or 303 to a POST with a GET without the body, so a webhook URL that
    redirects (http:// to https://, a missing trailing slash) took nothing, yet the notice was recorded delivered
    and never posted again."""
    from pipelines.lib import webhook

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            seen.append(("POST", self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(code)
            self.send_header("Location", "/moved")
            self.end_headers()

        def do_GET(self):  # noqa: N802
            seen.append(("GET", self.path, b""))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = serve(Handler)
    try:
        with pytest.raises(webhook.DeliveryError) as raised:
            webhook.post_json(f"http://127.0.0.1:{server.server_port}/hook", {"text": "hello"}, timeout_seconds=5)
    finally:
        server.shutdown()
    assert raised.value.http_status == code
    assert str(raised.value) == f"HTTP {code} (a redirect: set the webhook URL to the address it points to)"
    assert seen == [("POST", "/hook", b'{"text": "hello"}')]  # nothing followed


def test_a_notice_about_the_runs_takes_the_configured_format():
    """A break test: run-failure and missed-day notices were posted as {"text", "cachemeter"} whatever the format, a
    body PagerDuty (routing_key and event_action required) and Alertmanager refuse."""
    from pipelines.lib import webhook

    fields = {"event": "run_failure", "run_id": "abc"}
    text = "[critical] cachemeter run failed: cachemeter_ingest, run abc: price_book: bad price"
    key = "run_failure:abc"
    pagerduty = webhook.run_notice_payload(text, fields, key, webhook.DeliveryOptions(format="pagerduty",
                                                                                        routing_key="R0UTE"))
    assert pagerduty == {"routing_key": "R0UTE", "event_action": "trigger", "dedup_key": key,
                         "payload": {"summary": text, "source": "cachemeter", "severity": "critical",
                                     "custom_details": fields}}
    alertmanager = webhook.run_notice_payload(text, fields, key, webhook.DeliveryOptions(format="alertmanager"))
    assert alertmanager["status"] == "firing" and alertmanager["alerts"][0]["labels"] == {
        "alertname": "cachemeter_run_failure", "severity": "critical"}
    assert webhook.run_notice_payload(text, fields, key, webhook.DeliveryOptions(format="slack")) == {"text": text}
    assert webhook.run_notice_payload(text, fields, key) == {"text": text, "cachemeter": fields}


def test_a_url_with_a_space_inside_is_malformed_and_one_with_a_trailing_newline_is_not():
    from pipelines.lib import webhook

    with pytest.raises(webhook.DeliveryError, match="the webhook URL is malformed"):
        webhook.check_url(MALFORMED[-1])
    webhook.check_url(f"http://127.0.0.1:8080/services/{TOKEN}\n")  # trimmed, as urllib does


def test_notices_held_back_by_the_time_budget_are_said_and_posted_by_the_next_pass(warehouse_with_alerts, tmp_path,
                                                                                  monkeypatch):
    # a break test: notices the pass's time budget held back left the run green without a word (and a budget of 0,
    # accepted then, posted nothing, night after night)
    from dagster_duckdb import DuckDBResource

    from pipelines.defs.alerts.assets import alert_deliveries
    from pipelines.defs.settings import CachemeterSettings
    from pipelines.lib import progress

    db = copy_of(warehouse_with_alerts, tmp_path)
    with duckdb.connect(str(db)) as conn:
        resolved_while_the_webhook_was_down(conn)  # two notices due: opened, then resolved
    receiver = Receiver(delay=0.5)  # the first post spends the pass's budget of 0.1 s
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    resources = {"duckdb": DuckDBResource(database=str(db)),
                 "settings": CachemeterSettings(webhook_time_budget_seconds=0.1)}
    heard = []
    progress.set_listener(lambda step, done, total, label: heard.append(label) if step == "warning" else None)
    try:
        first = dg.materialize([alert_deliveries], resources=resources, instance=dg.DagsterInstance.ephemeral())
        second = dg.materialize([alert_deliveries], resources=resources, instance=dg.DagsterInstance.ephemeral())
    finally:
        progress.set_listener(None)
        receiver.close()
    (one,), (two,) = (r.asset_materializations_for_node("marts__alert_deliveries") for r in (first, second))
    assert (one.metadata["delivered"].value, one.metadata["deferred"].value) == (1, 1)
    assert heard == ["1 incident notice(s) still due: the webhook time budget (0.1 s, webhook.time_budget_seconds) ran "
                     "out; the next run posts them"]
    assert (two.metadata["delivered"].value, two.metadata["deferred"].value) == (1, 0)
    assert [k.rsplit(":", 1)[1] for k in receiver.keys] == ["opened", "resolved"]
