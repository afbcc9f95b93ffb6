"""Usage-API sources against a local fake server replaying recorded, documented page shapes
(fixtures/usage_api/): pagination, a 429 then success, failed pages quarantined with their reason,
an idempotent re-fetch, and the pages normalised into core.usage. Never the real APIs."""

import json
import threading
import time
from datetime import date, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import duckdb
import pytest

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from pipelines.lib.usage_api import client, pages
from tests.conftest import REPO

RECORDED = REPO / "fixtures" / "usage_api"
DAY = date(2026, 11, 20)
OPENAI_KEY, ANTHROPIC_KEY = "sk-admin-test-0penai-k3y", "sk-ant-admin01-test-k3y"
OPENAI_PAGES = [(RECORDED / f"openai_completions_1h_page{n}.json").read_bytes() for n in (1, 2, 3)]
MESSAGES_PAGE = (RECORDED / "anthropic_messages_page1.json").read_bytes()
COST_PAGE = (RECORDED / "anthropic_cost_report_page1.json").read_bytes()
COMPLETIONS, MESSAGES, COSTS = ("/v1/organization/usage/completions", "/v1/organizations/usage_report/messages",
                                "/v1/organizations/cost_report")


def recorded(name: str) -> bytes:
    return (RECORDED / name).read_bytes()


class FakeApis:
    """Both APIs on one local port. ``script[(path, cursor)]`` is the list of answers ``(status, headers,
    body)`` given in turn to that page's requests (the last one repeats); by default the recorded pages,
    chained by their ``next_page`` cursors. A request without the right key is answered 401."""

    def __init__(self):
        self.requests: list[tuple[str, list[tuple[str, str]], dict]] = []
        self.script: dict[tuple[str, str | None], list[tuple[int, dict, bytes]]] = {}
        self.set_pages(COMPLETIONS, OPENAI_PAGES)
        self.set_pages(MESSAGES, [MESSAGES_PAGE])
        self.set_pages(COSTS, [COST_PAGE])
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                url = urlsplit(self.path)
                query = parse_qsl(url.query)
                fake.requests.append((url.path, query, dict(self.headers)))
                authorised = (self.headers.get("Authorization") == f"Bearer {OPENAI_KEY}" if "organization/" in url.path
                              else self.headers.get("x-api-key") == ANTHROPIC_KEY
                              and self.headers.get("anthropic-version") == "2023-06-01")
                answers = fake.script.get((url.path, dict(query).get("page")))
                status, headers, body = (401, {}, b'{"error": {"message": "bad key"}}') if not authorised else \
                    (404, {}, b'{"error": {"message": "no such page"}}') if not answers else \
                    (answers.pop(0) if len(answers) > 1 else answers[0])
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set_pages(self, path: str, bodies: list[bytes]) -> None:
        cursor = None
        for body in bodies:
            self.script[(path, cursor)] = [(200, {}, body)]
            cursor = json.loads(body)["next_page"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    apis = FakeApis()
    yield apis
    apis.close()


def config(fake: FakeApis, width: str = "1h", **environ) -> pages.Config:
    return pages.Config.from_env({"OPENAI_ADMIN_KEY": OPENAI_KEY, "ANTHROPIC_ADMIN_KEY": ANTHROPIC_KEY,
                                  "CACHEMETER_OPENAI_API_BASE": fake.base, "CACHEMETER_ANTHROPIC_API_BASE": fake.base,
                                  "CACHEMETER_USAGE_API_BUCKET_WIDTH": width, "CACHEMETER_USAGE_API_BACKOFF_SECONDS": "0.05",
                                  "CACHEMETER_USAGE_API_RETRIES": "2", **environ})


def page_files(logs: Path) -> dict[str, bytes]:
    root = logs / pages.MANAGED_DIR
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stage(logs: Path, db: Path):
    with warehouse.connect(db) as conn:
        results = ingest.stage_logs(conn, logs, earliest=date(2020, 1, 1))
        usage = conn.execute(
            "select source_file, model, tenant, request_count, is_batch, uncached_input_tokens, cache_read_tokens, "
            "cache_write_5m_tokens, cache_write_1h_tokens, output_tokens from core.usage order by all").fetchall()
        quarantine = conn.execute("select source_file, reason from core.quarantine order by all").fetchall()
        files = conn.execute("select source_file, rows_in, rows_accepted, rows_quarantined from stage.files "
                             "order by all").fetchall()
    return results, usage, quarantine, files


def test_three_pages_are_followed_by_cursor_with_the_documented_query_and_headers(fake, tmp_path):
    results = pages.fetch_day(tmp_path, DAY, config(fake), "openai")

    assert [(r.source, r.pages, r.written, r.failure) for r in results] == [("openai_completions", 3, 3, None)]
    assert page_files(tmp_path) == {f"openai_completions/2026-11-20/page-000{n}.json": body
                                    for n, body in enumerate(OPENAI_PAGES, 1)}  # raw, byte for byte
    expected = [("start_time", "1795132800"), ("end_time", "1795219200"), ("bucket_width", "1h"), ("limit", "24"),
                ("group_by", "project_id"), ("group_by", "model"), ("group_by", "batch"), ("group_by", "service_tier")]
    assert [(path, query) for path, query, _ in fake.requests] == [
        (COMPLETIONS, expected), (COMPLETIONS, expected + [("page", "page_AAAAAGlVx4AAAAAAaVXHgA==")]),
        (COMPLETIONS, expected + [("page", "page_AAAAAGlV1ZAAAAAAaVXVkA==")])]
    assert fake.requests[0][2]["Authorization"] == f"Bearer {OPENAI_KEY}"


def test_anthropic_reports_use_rfc3339_bounds_group_by_brackets_and_the_version_header(fake, tmp_path):
    results = pages.fetch_day(tmp_path, DAY, config(fake, width="1d"), "anthropic")

    assert [(r.source, r.pages, r.failure, r.billed_usd) for r in results] == [
        ("anthropic_messages", 1, None, None), ("anthropic_cost_report", 1, None, Decimal("2772.0270"))]
    (path, query, headers), (cost_path, cost_query, _) = fake.requests
    assert (path, query) == (MESSAGES, [
        ("starting_at", "2026-11-20T00:00:00Z"), ("ending_at", "2026-11-21T00:00:00Z"), ("bucket_width", "1d"),
        ("limit", "1"), ("group_by[]", "model"), ("group_by[]", "service_tier"), ("group_by[]", "context_window"),
        ("group_by[]", "inference_geo"), ("group_by[]", "speed"), ("group_by[]", "workspace_id")])
    assert (headers["x-api-key"], headers["anthropic-version"]) == (ANTHROPIC_KEY, "2023-06-01")
    assert (cost_path, cost_query[-2:]) == (COSTS, [("group_by[]", "workspace_id"), ("group_by[]", "description")])
    # the cost report is kept raw beside the usage pages, under a name the ingest does not read as usage
    assert page_files(tmp_path) == {"anthropic_messages/2026-11-20/page-0001.json": MESSAGES_PAGE,
                                    "anthropic_cost_report/2026-11-20/page-0001.json.raw": COST_PAGE}


def test_a_429_is_retried_after_its_retry_after_then_the_page_is_stored(fake, tmp_path):
    fake.script[(COMPLETIONS, None)] = [(429, {"Retry-After": "1"}, recorded("openai_error_rate_limit.json")),
                                        (200, {}, OPENAI_PAGES[0])]
    fake.script[(MESSAGES, None)] = [(503, {}, recorded("anthropic_error_overloaded.json")), (200, {}, MESSAGES_PAGE)]
    started = time.monotonic()
    results = pages.fetch_day(tmp_path, DAY, config(fake), "all")
    elapsed = time.monotonic() - started

    assert [(r.source, r.pages, r.failure) for r in results] == [
        ("openai_completions", 3, None), ("anthropic_messages", 1, None), ("anthropic_cost_report", 1, None)]
    assert [p for p, _, _ in fake.requests].count(COMPLETIONS) == 4 and [p for p, _, _ in fake.requests].count(MESSAGES) == 2
    assert elapsed >= 1.0, "Retry-After: 1 was not waited for"
    assert page_files(tmp_path)["openai_completions/2026-11-20/page-0001.json"] == OPENAI_PAGES[0]


def test_failed_pages_are_quarantined_with_their_reason_and_the_other_sources_go_on(fake, tmp_path):
    cursor = json.loads(OPENAI_PAGES[0])["next_page"]
    fake.script[(COMPLETIONS, cursor)] = [(400, {}, recorded("openai_error_invalid_request.json"))]
    fake.script[(MESSAGES, None)] = [(200, {}, b'{"data": "not a list", "has_more": false}')]
    fake.script[(COSTS, None)] = [(503, {}, recorded("anthropic_error_overloaded.json"))]  # retries exhausted
    logs = tmp_path / "logs"
    logs.mkdir()
    results = pages.fetch_day(logs, DAY, config(fake), "all")

    assert {r.source: r.failure for r in results} == {
        "openai_completions": "openai_completions 2026-11-20 page 2: HTTP 400: invalid_request_error Invalid value "
                              "for 'page': cursor expired.",
        "anthropic_messages": "anthropic_messages 2026-11-20 page 1: not a documented Anthropic report page: no data "
                              "list (got data, has_more)",
        "anthropic_cost_report": "anthropic_cost_report 2026-11-20 page 1: HTTP 503 after 2 retries: overloaded_error "
                                 "Overloaded"}
    assert [p for p, _, _ in fake.requests].count(COMPLETIONS) == 2  # page 3's cursor is unknown: not asked
    stored = page_files(logs)
    assert sorted(stored) == ["anthropic_cost_report/2026-11-20/page-0001.json.raw",
                              "anthropic_messages/2026-11-20/page-0001.json",
                              "openai_completions/2026-11-20/page-0001.json", "openai_completions/2026-11-20/page-0002.json"]
    assert not any(key.encode() in body for body in stored.values() for key in (OPENAI_KEY, ANTHROPIC_KEY))

    _, usage, quarantine, files = stage(logs, tmp_path / "w.duckdb")
    prefix = pages.MANAGED_DIR + "/"
    assert quarantine == [
        (prefix + "anthropic_messages/2026-11-20/page-0001.json", "usage API page not fetched: anthropic_messages "
         "2026-11-20 page 1: not a documented Anthropic report page: no data list (got data, has_more)"),
        (prefix + "openai_completions/2026-11-20/page-0002.json", "usage API page not fetched: openai_completions "
         "2026-11-20 page 2: HTTP 400: invalid_request_error Invalid value for 'page': cursor expired.")]
    assert files == [(prefix + "anthropic_messages/2026-11-20/page-0001.json", 1, 0, 1),
                     (prefix + "openai_completions/2026-11-20/page-0001.json", 1, 1, 0),
                     (prefix + "openai_completions/2026-11-20/page-0002.json", 1, 0, 1)]
    assert len(usage) == 1  # page 1's one result


def test_a_dead_server_and_a_wrong_key_fail_their_page_without_the_key_in_the_reason(tmp_path):
    dead = pages.Config.from_env({"OPENAI_ADMIN_KEY": OPENAI_KEY, "CACHEMETER_OPENAI_API_BASE": "http://127.0.0.1:9/v1",
                                  "CACHEMETER_USAGE_API_RETRIES": "1", "CACHEMETER_USAGE_API_BACKOFF_SECONDS": "0.01"})
    [result] = pages.fetch_day(tmp_path, DAY, dead)
    assert result.failure == "openai_completions 2026-11-20 page 1: no answer after 1 retries (ConnectionError)"
    apis = FakeApis()
    try:
        wrong = pages.Config.from_env({"ANTHROPIC_ADMIN_KEY": "sk-ant-admin01-wrong", "CACHEMETER_ANTHROPIC_API_BASE": apis.base})
        results = pages.fetch_day(tmp_path, DAY, wrong)
    finally:
        apis.close()
    assert [r.failure for r in results] == [f"{s} 2026-11-20 page 1: HTTP 401: bad key"
                                            for s in ("anthropic_messages", "anthropic_cost_report")]
    assert len(apis.requests) == 2  # a 401 is not retried
    assert client.scrub("sent Bearer sk-1, then sk-1", ["Bearer sk-1"]).count("***") == 2


def test_re_fetching_a_day_changes_nothing_and_a_restated_day_replaces_its_rows(fake, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    db = tmp_path / "w.duckdb"
    pages.fetch_day(logs, DAY, config(fake), "all")
    _, usage, quarantine, files = stage(logs, db)
    identity = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (logs / pages.MANAGED_DIR).rglob("page-*")}

    again = pages.fetch_day(logs, DAY, config(fake), "all")
    results, usage_again, _, files_again = stage(logs, db)
    assert [(r.written, r.unchanged, r.removed) for r in again] == [(0, 3, 0), (0, 1, 0), (0, 1, 0)]
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in identity} == identity  # the same files, untouched
    assert all(r.skipped for r in results) and (usage_again, files_again) == (usage, files) and quarantine == []

    # the provider restates the day: two pages now, the first one's counts changed
    restated = json.loads(OPENAI_PAGES[0])
    restated["data"][0]["results"][0].update(input_tokens=412100, input_uncached_tokens=111044, num_model_requests=98)
    restated.update(has_more=True, next_page="page_restated")
    last = json.loads(OPENAI_PAGES[2])
    fake.script = {k: v for k, v in fake.script.items() if k[0] != COMPLETIONS}
    fake.set_pages(COMPLETIONS, [json.dumps(restated).encode(), json.dumps(last).encode()])
    [openai] = pages.fetch_day(logs, DAY, config(fake), "openai")
    assert (openai.pages, openai.written, openai.removed) == (2, 2, 1)
    _, usage_restated, _, files_restated = stage(logs, db)
    openai_rows = [row for row in usage_restated if "openai_completions" in row[0]]
    assert sorted(row[3:6] for row in openai_rows) == [(70, False, 92800), (98, False, 111044)]  # nothing counted twice
    assert [f[0].rsplit("/", 1)[1] for f in files_restated if "openai" in f[0]] == ["page-0001.json", "page-0002.json"]


def keyed_environment(monkeypatch, fake: FakeApis) -> None:
    for name, value in {"OPENAI_ADMIN_KEY": OPENAI_KEY, "ANTHROPIC_ADMIN_KEY": ANTHROPIC_KEY,
                        "CACHEMETER_OPENAI_API_BASE": fake.base, "CACHEMETER_ANTHROPIC_API_BASE": fake.base,
                        "CACHEMETER_USAGE_API_BUCKET_WIDTH": "1h", "CACHEMETER_USAGE_API_RETRIES": "1",
                        "CACHEMETER_USAGE_API_BACKOFF_SECONDS": "0.01"}.items():
        monkeypatch.setenv(name, value)


def test_cli_fetch_then_run_puts_the_exact_tokens_of_every_page_into_core_usage(fake, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipelines.cli import app
    from tests.conftest import query, run_pipeline

    keyed_environment(monkeypatch, fake)
    logs = tmp_path / "logs"
    logs.mkdir()
    done = CliRunner().invoke(app, ["fetch", "usage-api", "--day", "2026-11-20", "--logs", str(logs)])
    assert done.exit_code == 0, done.output
    assert "openai_completions 2026-11-20: 3 page(s), 3 written, 0 unchanged, 0 removed" in done.output
    assert "anthropic_cost_report 2026-11-20: 1 page(s), 1 written, 0 unchanged, 0 removed; billed $2,772.0270" in done.output
    assert OPENAI_KEY not in done.output and ANTHROPIC_KEY not in done.output

    db = run_pipeline(tmp_path, logs)
    rows = query(db, "select source_format, model, tenant, day, request_count, is_batch, uncached_input_tokens, "
                     "cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, output_tokens from core.usage "
                     "order by source_format, model, uncached_input_tokens")
    project, nov20 = "proj_IUbYUZaKCtzlPaLwLyiPksYG", date(2026, 11, 20)
    assert rows == [
        ("anthropic_usage_report", "claude-haiku-4-5-20251001", "default", nov20, None, False, 1284630, 14873920, 912400, 301250, 702118),
        ("anthropic_usage_report", "claude-sonnet-4-5-20250929", "default", nov20, None, True, 406211, 2115840, 88320, 0, 190442),
        ("openai_usage_bucket", "gpt-4.1-mini", project, nov20, 70, False, 92800, 204800, 0, 0, 12004),
        ("openai_usage_bucket", "gpt-4.1-mini", project, nov20, 97, False, 110944, 301056, 0, 0, 18211),
        ("openai_usage_bucket", "gpt-4.1-mini", project, nov20, 91, False, 126266, 262144, 0, 0, 16920),
        ("openai_usage_bucket", "gpt-5.6-sol", project, nov20, 8, True, 7680, 30720, 12800, 0, 2100)]
    assert query(db, "select count(*) from core.quarantine") == [(0,)]
    # the cost report is not usage: no file of it was staged; it is billed cost, in its own table
    assert query(db, "select count(*) from stage.files where source_file like '%cost_report%'") == [(0,)]
    assert query(db, "select day, result_index, amount_cents, billed_usd from core.billed_costs order by 2") == [
        (nov20, 1, Decimal("128463.00"), Decimal("1284.63")), (nov20, 2, Decimal("148739.20"), Decimal("1487.392")),
        (nov20, 3, Decimal("0.50"), Decimal("0.005"))]
    computed = query(db, "select sum(cost_usd) from core.usage_costs where provider = 'anthropic'")[0][0]
    assert computed > 0
    # (the recorded page bills 1,000x what the usage page's tokens cost at list rates: a gap the view shows)
    assert computed == Decimal("10.5462195")
    (row,) = query(db, "select * from marts.billed_cost_reconciliation")
    assert row[:-2] == (nov20, "anthropic", 3, Decimal("2772.027"), Decimal("2772.022"), computed, computed,
                        Decimal("2761.4757805"))
    assert row[-2:] == (pytest.approx(2761.4757805 / 2772.022, rel=1e-12), 0)


def test_the_cli_without_a_key_says_which_variable_to_set(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipelines.cli import app

    for name in ("OPENAI_ADMIN_KEY", "ANTHROPIC_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)
    done = CliRunner().invoke(app, ["fetch", "usage-api", "--source", "openai", "--logs", str(tmp_path)])
    assert done.exit_code == 1
    assert "no admin key: set OPENAI_ADMIN_KEY" in done.output and "Traceback" not in done.output


def test_the_asset_fetches_its_partition_fails_on_a_failed_page_and_without_keys_does_nothing(fake, tmp_path, monkeypatch):
    import dagster as dg

    from pipelines.defs.settings import CachemeterSettings
    from pipelines.defs.sources.assets import RETRY, build_usage_api_pages
    from pipelines.defs.sources.assets import usage_api_pages as registered

    assert registered.op.retry_policy == RETRY and RETRY.max_retries == 2
    usage_api_pages = build_usage_api_pages(dg.RetryPolicy(max_retries=1))  # the same asset, retried at once
    settings = CachemeterSettings(logs_dir=str(tmp_path))
    keyed_environment(monkeypatch, fake)
    result = dg.materialize([usage_api_pages], partition_key="2026-11-20", resources={"settings": settings})
    [materialized] = result.asset_materializations_for_node("sources__usage_api_pages")
    assert {k: materialized.metadata[k].value for k in ("sources", "pages", "pages_written", "failed_pages")} == \
        {"sources": 3, "pages": 5, "pages_written": 5, "failed_pages": 0}
    assert len(page_files(tmp_path)) == 5

    fake.script[(MESSAGES, None)] = [(500, {}, recorded("anthropic_error_overloaded.json"))]
    failed = dg.materialize([usage_api_pages], partition_key="2026-11-20", resources={"settings": settings},
                            raise_on_error=False)
    assert not failed.success
    assert [e.event_type_value for e in failed.all_events].count("STEP_UP_FOR_RETRY") == 1
    [error] = [e for e in failed.all_events if e.is_step_failure]
    assert error.step_failure_data.user_failure_data.description == \
        "anthropic_messages 2026-11-20 page 1: HTTP 500 after 1 retries: overloaded_error Overloaded"
    assert b"usage_api_fetch_failed" in page_files(tmp_path)["anthropic_messages/2026-11-20/page-0001.json"]

    for name in ("OPENAI_ADMIN_KEY", "ANTHROPIC_ADMIN_KEY"):
        monkeypatch.delenv(name)
    empty = tmp_path / "empty"
    empty.mkdir()
    instance = dg.DagsterInstance.ephemeral()
    idle = dg.materialize([usage_api_pages], partition_key="2026-11-20", instance=instance,
                          resources={"settings": CachemeterSettings(logs_dir=str(empty))})
    assert idle.success and list(empty.iterdir()) == []
    assert any("usage APIs: no OPENAI_ADMIN_KEY or ANTHROPIC_ADMIN_KEY set, nothing fetched" == entry.user_message
               for entry in instance.all_logs(idle.run_id))


def test_cost_report_pages_load_into_billed_costs_exactly_and_a_failed_page_keeps_its_day(fake, tmp_path):
    from pipelines.lib.usage_api import cost_report

    logs, db = tmp_path / "logs", tmp_path / "w.duckdb"
    logs.mkdir()
    pages.fetch_day(logs, DAY, config(fake), "anthropic")
    loaded_rows = ("select day, provider, source_file, result_index, workspace_id, description, cost_type, model, "
                   "service_tier, token_type, currency, amount_cents, billed_usd from core.billed_costs order by result_index")
    page = pages.MANAGED_DIR + "/anthropic_cost_report/2026-11-20/page-0001.json.raw"
    workspace = "wrkspc_01BkGOSN3XV1ABtAJqnzGvRo"
    expected = [
        (DAY, "anthropic", page, 1, workspace, "Claude Haiku 4.5 Usage - Input Tokens", "tokens", "claude-haiku-4-5-20251001",
         "standard", "uncached_input_tokens", "USD", Decimal("128463.00"), Decimal("1284.63")),
        (DAY, "anthropic", page, 2, workspace, "Claude Haiku 4.5 Usage - Cache Read", "tokens", "claude-haiku-4-5-20251001",
         "standard", "cache_read_input_tokens", "USD", Decimal("148739.20"), Decimal("1487.392")),
        (DAY, "anthropic", page, 3, None, "Web Search", "web_search", None, None, None, "USD", Decimal("0.50"), Decimal("0.005"))]
    with warehouse.connect(db) as conn:
        assert cost_report.load(conn, logs) == cost_report.Loaded(days=1, rows=3)
        assert conn.execute(loaded_rows).fetchall() == expected
        assert conn.execute("select sum(billed_usd) from core.billed_costs").fetchone() == (Decimal("2772.027"),)
        assert cost_report.load(conn, logs) == cost_report.Loaded(days=1, rows=3)  # again: the same rows, not twice
        assert conn.execute(loaded_rows).fetchall() == expected

        # the day fetched again, its page failing: the day keeps what was billed, the page is quarantined
        fake.script[(COSTS, None)] = [(503, {}, recorded("anthropic_error_overloaded.json"))]
        pages.fetch_day(logs, DAY, config(fake), "anthropic")
        reason = ("the page was not fetched: anthropic_cost_report 2026-11-20 page 1: HTTP 503 after 2 retries: "
                  "overloaded_error Overloaded")
        assert cost_report.load(conn, logs) == cost_report.Loaded(refused={page: reason})
        assert conn.execute(loaded_rows).fetchall() == expected
        assert conn.execute("select source_file, source_line, source_format, reason from core.quarantine").fetchall() == [
            (page, 0, "anthropic_cost_report", reason)]

        # a page not of the documented shape (an amount that is not a decimal string) is refused the same way
        (logs / page).write_text('{"data": [{"starting_at": "2026-11-20T00:00:00Z", "ending_at": "2026-11-21T00:00:00Z", '
                                 '"results": [{"amount": 12.5, "currency": "USD"}]}], "has_more": false, "next_page": null}')
        assert cost_report.load(conn, logs).refused == {
            page: "not a documented cost report page: a result without a decimal amount in USD"}
        assert conn.execute(loaded_rows).fetchall() == expected

        fake.set_pages(COSTS, [COST_PAGE])  # answered again: the day loads again, its quarantine record goes
        pages.fetch_day(logs, DAY, config(fake), "anthropic")
        assert cost_report.load(conn, logs) == cost_report.Loaded(days=1, rows=3)
        assert conn.execute("select count(*) from core.quarantine").fetchone() == (0,)


def test_a_cost_report_amount_beyond_any_usd_column_fails_its_page_not_the_fetch(fake, tmp_path):
    # a break test: "amount": "1E+999999999" raised decimal.Overflow ("error: Overflow: [<class 'decimal.Overflow'>]")
    # and nothing of the day was stored for either source
    page = json.loads(COST_PAGE)
    page["data"][0]["results"][0]["amount"] = "1E+999999999"
    fake.set_pages(COSTS, [json.dumps(page).encode()])
    logs = tmp_path / "logs"
    logs.mkdir()
    results = {r.source: r for r in pages.fetch_day(logs, DAY, config(fake), "all")}
    assert results["anthropic_cost_report"].failure == ("anthropic_cost_report 2026-11-20 page 1: not a documented "
                                                        "cost report page: a result without a decimal amount in USD")
    assert results["openai_completions"].failure is None and results["anthropic_messages"].failure is None
    assert "anthropic_cost_report/2026-11-20/page-0001.json.raw" in page_files(logs)


def test_a_day_not_over_and_a_base_url_that_is_no_url_are_refused_in_one_line(tmp_path, monkeypatch):
    # break tests: --day 9999-12-31 ended in "OverflowError: date value out of range" (and a future day was asked
    # for); CACHEMETER_OPENAI_API_BASE=notaurl failed every page with "(MissingSchema)", naming no setting
    from typer.testing import CliRunner

    from pipelines.cli import app

    monkeypatch.setenv("OPENAI_ADMIN_KEY", OPENAI_KEY)
    for day in ("9999-12-31", (pages_day_today() + timedelta(days=1)).isoformat()):
        done = CliRunner().invoke(app, ["fetch", "usage-api", "--day", day, "--logs", str(tmp_path)])
        assert done.exit_code == 1 and f"--day {day} has not ended yet (UTC)" in done.output, done.output
    with pytest.raises(ValueError, match=r"setting CACHEMETER_OPENAI_API_BASE: 'notaurl' is not an http\(s\) URL"):
        pages.Config.from_env({"OPENAI_ADMIN_KEY": OPENAI_KEY, "CACHEMETER_OPENAI_API_BASE": "notaurl"})
    with pytest.raises(ValueError, match=r"CACHEMETER_USAGE_API_TIMEOUT_SECONDS: '-1' is out of range"):
        pages.Config.from_env({"OPENAI_ADMIN_KEY": OPENAI_KEY, "CACHEMETER_USAGE_API_TIMEOUT_SECONDS": "-1"})


def pages_day_today() -> date:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).date()


def test_an_answer_that_trickles_in_fails_its_page_once_the_timeout_is_spent(tmp_path):
    # a break test: requests' timeout bounds each read, so a server sending one byte every half second held a fetch
    # for 54 s at CACHEMETER_USAGE_API_TIMEOUT_SECONDS=2 (and could hold the nightly fetch for ever)
    body = json.dumps({"object": "page", "data": [], "has_more": False}).encode()
    sent = []

    class Trickle(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    sent.append(byte)
                    time.sleep(0.05)  # the whole body: about 2.5 s
            except OSError:  # the client gave up
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        options = client.RetryOptions(retries=0, backoff_seconds=0.1, timeout_seconds=0.5)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/page"
        with pytest.raises(client.PageFailure, match=r"the answer took longer than 0.5 s to arrive whole "
                                                     r"\(CACHEMETER_USAGE_API_TIMEOUT_SECONDS\)"):
            client.get_json(client.session(options), url, [], {}, options)
        assert len(sent) < len(body)  # it stopped before the server was done
        whole = client.RetryOptions(retries=0, backoff_seconds=0.1, timeout_seconds=30)
        assert client.get_json(client.session(whole), url, [], {}, whole)[1] == json.loads(body)  # the same answer, in time
    finally:
        server.shutdown()
