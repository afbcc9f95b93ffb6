"""Alert delivery (lib/webhook.py and the Dagster sensor) against a real HTTP server on 127.0.0.1."""

import json
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dagster as dg
import duckdb
import pytest

from tests.conftest import run_pipeline
from tests.defs.test_pipeline import hit_rate_logs


class Receiver:
    """A local webhook endpoint that fails the first ``failures`` posts with HTTP 500."""

    def __init__(self, failures: int = 0):
        self.failures, self.bodies, self.calls = failures, [], 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                receiver.calls += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if receiver.calls <= receiver.failures:
                    self.send_response(500)
                else:
                    receiver.bodies.append(body)
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/SECRET-TOKEN-123"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def warehouse_with_alerts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("alerts")
    hit_rate_logs(tmp / "logs", broken_from=date(2026, 11, 8))
    return run_pipeline(tmp, tmp / "logs")


def copy_of(db, tmp_path):
    target = tmp_path / "w.duckdb"
    target.write_bytes(db.read_bytes())
    return target


def test_each_alert_is_posted_once_across_two_passes(warehouse_with_alerts, tmp_path):
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver()
    try:
        with duckdb.connect(str(db)) as conn:
            first = webhook.deliver_pending(conn, receiver.url, sleep=lambda s: None)
            second = webhook.deliver_pending(conn, receiver.url, sleep=lambda s: None)
            alerts = conn.execute("select count(*) from marts.cache_alerts").fetchall()[0][0]
    finally:
        receiver.close()
    assert alerts == 3 and (first.delivered, second.delivered) == (3, 0)
    assert len(receiver.bodies) == 3 and len({b["alert"]["alert_id"] for b in receiver.bodies}) == 3
    assert receiver.bodies[0]["text"].startswith("[critical] hit_rate_drop on 2026-11-08: openai gpt-4.1 (acme/bot)")


def test_a_failing_endpoint_is_retried_with_backoff_then_succeeds_without_duplicates(warehouse_with_alerts, tmp_path):
    from pipelines.lib import webhook

    db = copy_of(warehouse_with_alerts, tmp_path)
    receiver = Receiver(failures=4)  # first alert: fails 3 times (gives up this pass); second: 1 failure then ok
    waits = []
    try:
        with duckdb.connect(str(db)) as conn:
            first = webhook.deliver_pending(conn, receiver.url, sleep=waits.append)
            second = webhook.deliver_pending(conn, receiver.url, sleep=waits.append)
            attempts = conn.execute("select alert_id, attempt, status, http_status, error from marts.alert_deliveries "
                                    "order by attempted_at, attempt").fetchall()
    finally:
        receiver.close()
    assert (first.delivered, first.failed) == (2, 1) and (second.delivered, second.failed) == (1, 0)
    assert waits[:2] == [0.5, 1.0]  # exponential backoff between retries
    assert len(receiver.bodies) == 3 and len({b["alert"]["alert_id"] for b in receiver.bodies}) == 3
    assert [a[2] for a in attempts].count("delivered") == 3 and {a[3] for a in attempts if a[2] == "failed"} == {500}
    assert all("SECRET-TOKEN" not in (a[4] or "") for a in attempts)


def test_sensor_delivers_and_keeps_the_url_out_of_its_messages(warehouse_with_alerts, tmp_path, monkeypatch):
    from dagster_duckdb import DuckDBResource

    from pipelines.defs.alerts.sensors import alert_webhook_sensor
    from pipelines.defs.settings import CachemeterSettings

    db = copy_of(warehouse_with_alerts, tmp_path)
    settings = CachemeterSettings()
    context = dg.build_sensor_context(resources={"duckdb": DuckDBResource(database=str(db)), "settings": settings})
    monkeypatch.delenv("CACHEMETER_WEBHOOK_URL", raising=False)
    assert "set CACHEMETER_WEBHOOK_URL" in alert_webhook_sensor(context).skip_message
    receiver = Receiver()
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", receiver.url)
    try:
        result = alert_webhook_sensor(dg.build_sensor_context(
            resources={"duckdb": DuckDBResource(database=str(db)), "settings": settings}))
    finally:
        receiver.close()
    assert result.skip_message.startswith("delivered 3 alert(s)") and "SECRET-TOKEN" not in result.skip_message
    assert b"SECRET-TOKEN" not in db.read_bytes()
