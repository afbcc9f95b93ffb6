"""The report page's JavaScript bundle: built by vl-convert once, then read from the on-disk cache; the
report's rows in a fixed order (ties broken by the rows' keys), so the same data gives the same page."""

from datetime import date

import duckdb
import pandas as pd
import pytest
import vl_convert

from pipelines.lib import report, warehouse


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", str(tmp_path / "cache"))
    report.javascript_bundle.cache_clear()
    yield tmp_path / "cache"
    report.javascript_bundle.cache_clear()


def test_the_bundle_is_vl_converts_and_is_read_back_from_disk(fresh_cache, monkeypatch):
    built = report.javascript_bundle()
    assert built == vl_convert.javascript_bundle() and "vegaEmbed" in built and len(built) > 500_000
    assert report.bundle_path() == fresh_cache / f"vega-bundle-vl-convert-{vl_convert.__version__}.js"
    assert report.bundle_path().read_text(encoding="utf-8") == built
    report.javascript_bundle.cache_clear()  # as a new process would
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda: pytest.fail("bundled again instead of read"))
    assert report.javascript_bundle() == built
    assert list(fresh_cache.iterdir()) == [report.bundle_path()]  # no partial file left behind


def test_a_damaged_or_unwritable_cache_is_rebuilt_not_trusted(fresh_cache, monkeypatch):
    fresh_cache.mkdir()
    report.bundle_path().write_text("half a bund", encoding="utf-8")
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda: "window.vegaEmbed = 1;")
    assert report.javascript_bundle() == "window.vegaEmbed = 1;"
    assert report.bundle_path().read_text(encoding="utf-8") == "window.vegaEmbed = 1;"
    report.javascript_bundle.cache_clear()
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", "/proc/no-such-cache")  # cannot be created
    assert report.javascript_bundle() == "window.vegaEmbed = 1;"


def test_text_in_the_data_cannot_close_the_page_script(fresh_cache):
    hostile = "</script><script>alert(1)</script>"
    data = report.ReportData(
        daily=pd.DataFrame({"day": pd.to_datetime(["2026-11-01"]), "cost_usd": [1.0], "no_cache_cost_usd": [2.0],
                            "savings_usd": [1.0]}),
        apps=pd.DataFrame({"day": pd.to_datetime(["2026-11-01"]), "app": [hostile], "token_hit_rate": [0.5]}),
        causes=pd.DataFrame({"cause": ["hit_rate_drop"], "lost_savings_usd": [1.0], "incidents": [1]}),
        alerts=pd.DataFrame({"message": [hostile]}), families=pd.DataFrame())
    page = report.render_html(data)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the bundle and the embed call only
    assert "\\u003c/script>\\u003cscript>alert(1)" in page  # the app name, escaped inside the spec
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # the alert message, escaped in the table


def test_a_report_write_that_fails_midway_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text("<html>yesterday's report</html>", encoding="utf-8")
    # the page cannot be encoded past its middle: the write fails after half of it is out
    monkeypatch.setattr(report, "load", lambda conn, days: None)
    monkeypatch.setattr(report, "render_html", lambda data: "<html>" + "x" * 200_000 + "\ud800</html>")
    with pytest.raises(UnicodeEncodeError):
        report.write(None, out)
    assert out.read_text(encoding="utf-8") == "<html>yesterday's report</html>"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind
    monkeypatch.setattr(report, "render_html", lambda data: "<html>today</html>")
    assert report.write(None, out) == out and out.read_text(encoding="utf-8") == "<html>today</html>"
    assert list(tmp_path.iterdir()) == [out]


# Report rows that tie on their sort values, each table's rows listed in the order they are inserted; the
# report must list them in the documented tie-break order (the rows' own keys), whatever the physical order.
DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)
TIED_ROWS = {
    # three apps with the same prompt tokens: the two top apps are the first two by name (alpha, mid)
    "marts.daily_savings": [
        {"day": day, "provider": "openai", "model": "gpt-4.1", "tenant": "t", "app": app, "prompt_tokens": 1000,
         "cache_read_tokens": reads, "cost_usd": 1, "no_cache_cost_usd": 2, "savings_usd": 1}
        for day in (DAY1, DAY2) for app, reads in (("zeta", 900), ("mid", 500), ("alpha", 100))],
    "marts.cache_alerts": [
        {"alert_id": rule, "day": DAY2, "rule": rule, "severity": "warning", "lost_savings_usd": 2.5, "message": rule}
        for rule in ("rotating_preamble", "hit_rate_drop")],
    "marts.cache_incidents": [
        {"incident_key": f"{status}-{rule}-{app}", "rule": rule, "severity": "warning", "app": app,
         "opened_day": opened, "last_day": DAY2, "status": status, "lost_savings_usd": 3 if rule == "negative_cache_roi" else 1,
         "message": f"{rule} {app}"}
        for status, rule, app, opened in (("open", "negative_cache_roi", "alpha", DAY1),
                                          ("resolved", "hit_rate_drop", "alpha", DAY2),
                                          ("open", "hit_rate_drop", "zeta", DAY1),
                                          ("open", "hit_rate_drop", "alpha", DAY1))],
    # fp:a on anthropic spans two apps (alpha named), and costs what fp:a on openai and fp:b cost
    "marts.prefix_families": [
        # (the KV-memory rows add up the cached spans: two requests in each family that cached, fp:a on anthropic
        # over two days, 400 and 700 tokens in one row each, so 550 a row; fp:z cached nothing; the TTFT estimate
        # lists the families whose hits logged no TTFT, all with one request: fp:z has none)
        {"day": day, "prefix_family": family, "provider": provider, "model": "m", "tenant": "t", "app": app,
         "requests": 1, "prompt_tokens": 10, "cache_read_tokens": 5, "cost_usd": cost, "savings_usd": 0,
         "lost_savings_usd": 0, "cached_rows": cached[0], "cached_requests": cached[1], "cached_span_tokens": cached[2],
         "unmeasured_hit_requests": 1 if cached[0] else 0, "unmeasured_cache_read_tokens": 5 if cached[0] else 0}
        for day, family, provider, app, cost, cached in ((DAY1, "fp:b", "openai", "zeta", 1, (1, 2, 500)),
                                                         (DAY1, "fp:a", "openai", "mid", 1, (2, 2, 1000)),
                                                         (DAY1, "fp:a", "anthropic", "zeta", 1, (1, 1, 400)),
                                                         (DAY2, "fp:a", "anthropic", "alpha", 0, (1, 1, 700)),
                                                         (DAY2, "fp:z", "openai", "alpha", 5, (0, None, None)))],
    "marts.whatif_cache_ttl": [
        {"day": DAY2, "prefix_family": family, "provider": "anthropic", "model": "m", "tenant": "t", "app": "alpha",
         "ttl_option": "1h", "current_ttl": "5m", "requests": 3, "cost_now_usd": 2, "cost_usd": 1, "saving_usd": 1}
        for family in ("fp:b", "fp:a")],
    "marts.whatif_routing": [
        {"day": DAY2, "policy": policy, "cards": 4, "requests": 3, "prompt_tokens": 10, "prefill_tokens": prefill}
        for policy, prefill in (("round_robin", 8), ("prefix_hash", 4))],
    # the same family on two tenants (the report shows no tenant column: hit_requests tells them apart)
    "marts.ttft_by_family": [
        {"day": DAY2, "prefix_family": "fp:a", "provider": "openai", "model": "m", "tenant": tenant, "app": "alpha",
         "ttft_requests": 5, "hit_requests": hits, "miss_requests": 5 - hits, "bad_latency_requests": 0}
        for tenant, hits in (("t2", 3), ("t1", 4))],
}


def tied_report(physical_order) -> report.ReportData:
    """The report of ``TIED_ROWS``, each table's rows inserted in ``physical_order(rows)``."""
    with warehouse.prepare(duckdb.connect(":memory:")) as conn:
        for table, listed in TIED_ROWS.items():
            columns = list(listed[0])
            conn.executemany(f"insert into {table} ({', '.join(columns)}) values ({', '.join('?' * len(columns))})",
                             [[row[c] for c in columns] for row in physical_order(listed)])
        return report.load(conn, days=30, top_apps=2)


def rows(frame: pd.DataFrame, *columns: str) -> list[tuple]:
    return [tuple(str(v) if isinstance(v, pd.Timestamp) else v for v in row) for row in frame[list(columns)].values]


@pytest.mark.parametrize("physical_order", [list, lambda listed: listed[::-1]], ids=["as_listed", "reversed"])
def test_tied_rows_come_out_in_the_tie_break_order(physical_order):
    data = tied_report(physical_order)
    day1, day2 = str(pd.Timestamp(DAY1)), str(pd.Timestamp(DAY2))
    assert rows(data.apps, "day", "app", "token_hit_rate") == [
        (day1, "alpha", 0.1), (day1, "mid", 0.5), (day2, "alpha", 0.1), (day2, "mid", 0.5)]
    assert rows(data.causes, "cause", "lost_savings_usd", "incidents") == [  # the incidents' losses, as their table
        ("hit_rate_drop", 3.0, 3), ("negative_cache_roi", 3.0, 1)]
    assert rows(data.alerts, "status", "since", "message") == [
        ("open", "2026-11-01", "hit_rate_drop alpha"), ("open", "2026-11-01", "hit_rate_drop zeta"),
        ("open", "2026-11-01", "negative_cache_roi alpha"), ("resolved", "2026-11-02", "hit_rate_drop alpha")]
    assert rows(data.families, "prefix_family", "provider", "app", "requests", "cost_usd") == [
        ("fp:z", "openai", "alpha", 1, 5.0), ("fp:a", "anthropic", "alpha", 2, 1.0),
        ("fp:a", "openai", "mid", 1, 1.0), ("fp:b", "openai", "zeta", 1, 1.0)]
    whatif = data.whatif
    assert rows(whatif["ttl"], "prefix_family", "switch_to", "saving_per_day_usd") == [
        ("fp:a", "1h", 1.0), ("fp:b", "1h", 1.0)]
    assert rows(whatif["routing"], "cards", "policy", "prefill_tokens") == [
        (4, "prefix_hash", 4), (4, "round_robin", 8)]
    assert rows(whatif["ttft"], "prefix_family", "hit_requests") == [("fp:a", 4), ("fp:a", 3)]  # tenants t1, t2
    assert rows(whatif["kv"], "prefix_family", "provider", "app", "requests", "mean_cached_span_tokens") == [
        ("fp:a", "anthropic", "alpha", 2, 550), ("fp:a", "openai", "mid", 2, 500), ("fp:b", "openai", "zeta", 2, 500)]
    assert rows(whatif["ttft_estimate"], "prefix_family", "provider", "app", "hits") == [
        ("fp:a", "anthropic", "alpha", 1), ("fp:a", "anthropic", "zeta", 1), ("fp:a", "openai", "mid", 1),
        ("fp:b", "openai", "zeta", 1)]


def test_the_same_rows_stored_in_another_order_give_the_same_page(monkeypatch):
    monkeypatch.setattr(report, "javascript_bundle", lambda: "/* the bundle */")
    page = report.render_html(tied_report(list))
    assert page == report.render_html(tied_report(lambda listed: listed[::-1]))
    tables = page[page.index("<h2>Incidents"):]
    assert tables.index("hit_rate_drop alpha") < tables.index("hit_rate_drop zeta") < tables.index("negative_cache_roi")


def test_the_kv_rows_from_the_families_day_sums_equal_an_average_of_the_requests(tmp_path):
    # the report's KV-memory rows add up marts.prefix_families' day sums (cached rows, requests, span tokens); over
    # a real run of two days they must be what averaging the cached requests of core.usage gives
    import sys

    from pipelines.lib.sql import statement
    from tests.conftest import REPO, run_pipeline
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(600, 2, tmp_path / "logs", seed=11)
    db = run_pipeline(tmp_path, tmp_path / "logs")
    per_request = """
        select prefix_family, provider, model, min(app) as app, sum(request_count)::bigint as requests,
               round(avg(cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens))::bigint as mean_cached_span_tokens
        from core.usage
        where day >= $start and day < $end and cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens > 0
        group by prefix_family, provider, model
        order by requests desc, prefix_family, provider, model limit $limit"""
    params = {"start": date(2026, 10, 1), "end": date(2026, 10, 3), "limit": 1000}
    with duckdb.connect(str(db), read_only=True) as conn:
        expected = conn.execute(per_request, params).fetchall()
        assert conn.execute(statement("whatif/report__family_spans"), params).fetchall() == expected
    assert len(expected) > 10 and len({row[5] for row in expected}) > 5  # many families, many different means


def test_the_ttft_estimate_rows_from_the_families_day_sums_equal_those_of_the_requests(tmp_path):
    # the report's TTFT-estimate rows add up marts.prefix_families' day sums (requests, unmeasured hits and their
    # cache reads); over a real run of two days, some requests logging a TTFT and some not, they must be the rows
    # sql/whatif/ttft__family_usage.sql gives from the requests themselves (busiest first, hits without TTFT only)
    import random
    import sys

    from pipelines.lib.sql import statement
    from pipelines.lib.whatif import ttft_estimate
    from tests.conftest import REPO, run_pipeline
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(600, 2, tmp_path / "logs", seed=11)
    pick = random.Random(5)
    lines = ["request_id,ts,provider,model,tenant,app,uncached_input_tokens,cache_read_tokens,output_tokens,ttft_ms"]
    for n in range(300):  # five apps over both days: hits and misses, about half of them logging a TTFT
        read = pick.choice([0, 1024, 2048, 4096])
        ttft = pick.choice(["", str(pick.randint(150, 2500))])
        lines.append(f"t{n},2026-10-0{1 + n % 2}T{n % 24:02d}:{n % 60:02d}:00Z,anthropic,claude-sonnet-4-5,acme,"
                     f"app-{n % 5},{pick.randint(50, 3000)},{read},{pick.randint(5, 400)},{ttft}")
    (tmp_path / "logs" / "timed.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = run_pipeline(tmp_path, tmp_path / "logs")
    start, end = date(2026, 10, 1), date(2026, 10, 3)
    keys = ("prefix_family", "provider", "model", "tenant", "app", "requests", "unmeasured_hit_requests",
            "unmeasured_cache_read_tokens")
    with duckdb.connect(str(db), read_only=True) as conn:
        expected = [tuple(r[k] for k in keys) for r in ttft_estimate.family_rows(conn, start, end)
                    if r["unmeasured_hit_requests"]]
        found = conn.execute(statement("whatif/report__ttft_estimate"),
                             {"start": start, "end": end, "limit": 1000}).fetchall()
        measured = conn.execute("select count(ttft_ms), count(*) from core.usage where provider = 'anthropic' "
                                "and model = 'claude-sonnet-4-5' and tenant = 'acme'").fetchone()
    assert found == expected
    assert 100 < measured[0] < 200 and measured[1] == 300  # about half logged a TTFT: the sums leave those out
    assert len(expected) > 10 and any(row[4].startswith("app-") for row in expected)


def test_money_below_a_cent_shows_four_decimals_not_zero():
    import pandas as pd

    from pipelines.lib import report

    page = report._table(pd.DataFrame({"app": ["a", "b", "c"], "saving_per_day_usd": [0.0045, 12.345, 0.0]}),
                         money=("saving_per_day_usd",))
    assert "<td>$0.0045</td>" in page and "<td>$12.35</td>" in page and "<td>$0.00</td>" in page


def test_an_empty_ttl_section_says_whether_no_switch_pays_or_nothing_could_be_replayed(tmp_path):
    # it said "None." either way. OpenAI's catalogue rows price no cache write (genai-prices: written at the input
    # rate, whatever the retention), so an OpenAI-only warehouse replays no family; an Anthropic family that writes a 5-minute entry and reads it a
    # minute later pays least as it is (a 1-hour write costs 2x the input rate against 1.25x: Anthropic's pricing
    # page), so its family is replayed and no switch pays
    from pipelines.lib.whatif import report_sections
    from tests.conftest import run_pipeline, write_jsonl

    def usage(n, minute, body):
        return {"ts": f"2026-11-20T09:{minute:02d}:00Z", "request_id": f"r{n}", "tenant": "acme", "app": "bot",
                "response": body}

    openai = [usage(n, n, {"model": "gpt-4o", "usage": {"prompt_tokens": 3000, "completion_tokens": 10,
                                                       "prompt_tokens_details": {"cached_tokens": 2048 * (n > 0)}}})
              for n in range(3)]
    anthropic = [usage(n, n, {"type": "message", "model": "claude-sonnet-4-5", "usage": {
        "input_tokens": 20, "cache_creation_input_tokens": 3000 * (n == 0), "cache_read_input_tokens": 3000 * (n > 0),
        "output_tokens": 10}}) for n in range(3)]
    notes = {}
    for name, records in (("openai", openai), ("anthropic", anthropic)):
        write_jsonl(tmp_path / name / "logs" / "usage.jsonl", records)
        db = run_pipeline(tmp_path / name, tmp_path / name / "logs")
        with duckdb.connect(str(db), read_only=True) as conn:
            frames = report_sections.load(conn, date(2026, 11, 20), date(2026, 11, 21))
        assert frames["ttl"].empty
        notes[name] = report_sections.html(frames, lambda frame, **_: "<p>table</p>")
    assert "No family could be replayed" in notes["openai"] and "None: every family" not in notes["openai"]
    assert "None: every family replayed (1) cost the least with the retention it uses now" in notes["anthropic"]
    assert "No family could be replayed" not in notes["anthropic"]


def test_each_lost_savings_figure_says_what_it_measures(fresh_cache):
    # one incident showed three lost-savings amounts (its frozen baseline $4.19, the causes chart about $5.31, the
    # families table $5.57) and nothing said they measure against different baselines (a reader's question)
    data = report.ReportData(
        daily=pd.DataFrame({"day": pd.to_datetime(["2026-11-01"]), "cost_usd": [1.0], "no_cache_cost_usd": [2.0],
                            "savings_usd": [1.0]}),
        apps=pd.DataFrame({"day": pd.to_datetime(["2026-11-01"]), "app": ["a"], "token_hit_rate": [0.5]}),
        causes=pd.DataFrame({"cause": ["hit_rate_drop"], "lost_savings_usd": [4.19], "incidents": [1]}),
        alerts=pd.DataFrame({"status": ["open"], "lost_savings_usd": [4.19]}),
        families=pd.DataFrame({"prefix_family": ["key:1"], "below_own_trend_usd": [5.57]}))
    page = report.render_html(data)
    incidents, families = page.index("<h2>Incidents"), page.index("<h2>Costliest prefix families")
    assert page.index("baseline frozen on the day it opened", incidents) < families  # under the incidents' heading
    assert page.index("the family&#x27;s own trailing hit rate", families) > families
    chart = report.charts(data)[2].to_dict()["title"]
    # the chart sums the incidents, so it gives the incidents table's figure (it summed the daily alerts: $5.31)
    assert chart["text"] == "Lost savings by cause" and "The incidents' lost savings (the table below)" in " ".join(
        chart["subtitle"])
