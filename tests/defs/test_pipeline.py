"""The assets end to end through Dagster (in-process): costs, savings, alerts, idempotent partitions."""

import json
import shutil
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import dagster as dg

from tests.conftest import REPO, query, run_pipeline, snapshot, write_jsonl, write_prices


def test_definitions_load_with_assets_jobs_schedule_and_sensors():
    from pipelines.definitions import defs
    from pipelines.defs.nightly.schedules import nightly_schedule

    loaded = defs()
    keys = {k.to_user_string() for k in loaded.resolve_all_asset_keys()}
    assert keys == {"stage/files", "core/quarantine", "core/prices", "core/cache_minimums", "core/usage",
                    "core/usage_costs", "marts/daily_savings", "marts/prefix_families", "marts/cost_reconciliation", "marts/cache_alerts",
                    "marts/alert_deliveries", "publish/warehouse_snapshot", "publish/cache_report",
                    "marts/whatif_routing", "marts/whatif_cache_ttl", "marts/ttft_by_family",
                    "sources/usage_api_pages", "core/billed_costs"}
    for job in ("cachemeter_ingest", "cachemeter_daily", "cachemeter_publish"):
        assert loaded.resolve_job_def(job).tags["cachemeter/warehouse"] == "1"  # one run at a time (dagster.yaml)
    # on by default: the nightly schedule and the sensors that finish and watch it
    assert loaded.resolve_schedule_def("nightly_schedule").default_status == dg.DefaultScheduleStatus.RUNNING
    for sensor in ("pending_days_sensor", "run_failure_notice", "nightly_watchdog"):
        assert loaded.resolve_sensor_def(sensor).default_status == dg.DefaultSensorStatus.RUNNING, sensor
    assert loaded.resolve_sensor_def("late_logs_sensor").default_status == dg.DefaultSensorStatus.STOPPED
    # yesterday's usage by 06:00 UTC, in Dagster's own terms too (shown on the asset)
    freshness = loaded.resolve_asset_graph().get(dg.AssetKey(["core", "usage"])).freshness_policy
    assert (freshness.deadline_cron, freshness.lower_bound_delta) == ("0 6 * * *", timedelta(hours=24))
    # the usage-API fetch: yesterday's partition, half an hour before staging (off without an admin key)
    from pipelines.defs.sources.schedules import usage_api_schedule

    fetch = usage_api_schedule(dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 29, 2, 0, tzinfo=timezone.utc)))
    assert (fetch.run_key, fetch.partition_key, usage_api_schedule.cron_schedule) == ("2026-11-28", "2026-11-28", "0 2 * * *")
    request = nightly_schedule(dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 29, 2, 30, tzinfo=timezone.utc)))
    assert request.run_key == "2026-11-29T02:30" and request.partition_key is None  # stages; the sensor rebuilds


def test_worked_example_50k_requests_90_percent_cached(tmp_path):
    # The field's worked example: 50,000 requests/day x 2,000-token prompt at $3.00/MTok uncached costs $300/day;
    # with 90% of prompt tokens read from cache at $0.30/MTok it costs $57/day, saving $243.
    records = ({"ts": "2026-11-20T12:00:00Z", "provider": "openai", "model": "house-model", "request_id": f"r{i}",
                "response": {"usage": {"prompt_tokens": 2000, "completion_tokens": 0,
                                       "prompt_tokens_details": {"cached_tokens": 1800}}}} for i in range(50_000))
    logs = tmp_path / "logs"
    write_jsonl(logs / "day.jsonl", records)
    prices = write_prices(tmp_path / "prices.csv", [{"provider": "openai", "model": "house-model", "effective_from": "2026-01-01",
                                                     "input_per_mtok": "3.00", "cache_read_per_mtok": "0.30"}])
    db = run_pipeline(tmp_path, logs, prices)
    row = query(db, "select requests, prompt_tokens, cache_read_tokens, token_hit_rate, no_cache_cost_usd, cost_usd, "
                    "savings_usd, unpriced_requests from marts.daily_savings where day = '2026-11-20'")
    assert row == [(50_000, 100_000_000, 90_000_000, 0.9, Decimal("300"), Decimal("57"), Decimal("243"), 0)]
    # totals equal the sum of line items exactly
    assert query(db, "select sum(cost_usd) from core.usage_costs") == [(Decimal("57"),)]


PRICE_KEYS = {"input_uncached": "input_per_mtok", "cache_read": "cache_read_per_mtok",
              "cache_write_5m": "cache_write_5m_per_mtok", "cache_write_1h": "cache_write_1h_per_mtok", "output": "output_per_mtok"}
TOKEN_COLUMNS = {"input_uncached": "uncached_input_tokens", "cache_read": "cache_read_tokens",
                 "cache_write_5m": "cache_write_5m_tokens", "cache_write_1h": "cache_write_1h_tokens", "output": "output_tokens"}
# The payload's own layer names its provider, except a bare Azure OpenAI body, which is OpenAI-shaped:
# Azure is named the way a user names it, in the folder's source.yaml.
CASE_SOURCE_PROVIDER = {"C13": "azure"}
# provider and catalogue model each case is priced under (its prices_per_mtok become a dated override)
CASE_PRICE_KEY = {"C01": ("openai", "gpt-4o-2024-08-06"), "C02": ("anthropic", "claude-3-7-sonnet-20250219"),
                  "C03": ("anthropic", "claude-3-5-haiku-20241022"), "C04": ("gemini", "gemini-2.5-pro"),
                  "C05": ("anthropic", "claude-sonnet-4-5"), "C06": ("openrouter", "openai/gpt-4.1"),
                  "C07": ("bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
                  "C08": ("openai", "gpt-5-mini"), "C09": ("gemini", "gemini-2.5-flash"),
                  "C10": ("anthropic", "claude-sonnet-4-20250514"), "C11": ("anthropic", "claude-sonnet-4-20250514"),
                  "C12": ("anthropic", "claude-sonnet-4-5"), "C13": ("azure", "gpt-4o-2024-11-20"),
                  "C14": ("deepseek", "deepseek-chat"), "C15": ("openai", "gpt-5.4-pro"),
                  "C16": ("anthropic", "claude-3-5-sonnet-20241022"), "C17": ("gemini", "gemini-flash-lite-latest")}
# the variant a case's prices_per_mtok are: C12's are Anthropic's batch rates (its notes: "batch input $1.50, batch
# cache read $0.15"), so they are stated as the override's batch row; a standard row would be halved for the batch
# request as the batch discount (lib/prices.BATCH_DISCOUNTS)
CASE_PRICE_VARIANT = {"C12": "batch"}


def test_all_cost_cases_from_public_bug_reports_reproduce_exactly(tmp_path, shared):
    # ../shared/cases/cost_cases.json: each payload goes in as its layer emits it (a raw body, a batch result,
    # a stream, a span, a LangChain or AI SDK usage object, an engine log), priced with its prices_per_mtok
    # as an override dated to the case's own day, so cases sharing a model keep their own prices.
    cases = json.loads((shared / "cases" / "cost_cases.json").read_text())
    assert len(cases) == 18
    logs, price_rows = tmp_path / "logs", []
    for index, case in enumerate(cases):
        day = date(2026, 6, 1) + timedelta(days=index)
        folder = logs / case["case"]
        folder.mkdir(parents=True)
        (folder / "payload.json").write_text(json.dumps(case["payload"]))
        provider = CASE_SOURCE_PROVIDER.get(case["case"])
        (folder / "source.yaml").write_text(f"ts: {day}T12:00:00Z\ntenant: {case['case']}\n"
                                            + (f"provider: {provider}\n" if provider else ""))
        if case["prices_per_mtok"]:
            provider, model = CASE_PRICE_KEY[case["case"]]
            price_rows.append({"provider": provider, "model": model, "effective_from": str(day),
                               "price_variant": CASE_PRICE_VARIANT.get(case["case"], ""),
                               **{PRICE_KEYS[k]: repr(v) for k, v in case["prices_per_mtok"].items()}})
    db = run_pipeline(tmp_path, logs, write_prices(tmp_path / "prices.csv", price_rows))
    for case in cases:
        got = query(db, "select u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens, "
                        "u.output_tokens, c.cost_usd, c.priced, c.cache_outcome, u.reasoning_tokens "
                        "from core.usage u join core.usage_costs c using (request_id) where u.tenant = $t", {"t": case["case"]})
        expected = case["expected"]
        if expected["cost_usd"] is None:  # C18: an engine log is not billable usage; nothing lands, nothing is saved
            assert got == [], case["case"]
            reason = query(db, "select reason from core.quarantine where source_file like $f", {"f": case["case"] + "/%"})
            assert len(reason) == 1 and reason[0][0].startswith("engine log, not per-request usage"), reason
            continue
        assert len(got) == 1, case["case"]
        tokens = dict(zip(TOKEN_COLUMNS, got[0][:5]))
        assert tokens == {k: expected["billable_tokens"].get(k, 0) for k in TOKEN_COLUMNS}, (case["case"], case["id"], tokens)
        assert got[0][6] is True and got[0][5] == Decimal(str(expected["cost_usd"])), (case["case"], got[0][5])
        if "buggy_cost_usd" in expected:  # the faulty tool's figure is not what we get
            assert got[0][5] != Decimal(str(expected["buggy_cost_usd"]))
        if "reasoning_tokens_inside_output" in expected:  # reasoning is part of output, never added again
            assert got[0][8] == expected["reasoning_tokens_inside_output"] and got[0][4] == expected["billable_tokens"]["output"]
        if case["case"] == "C16":  # 787 tokens is below Claude 3.5 Sonnet's 1,024-token minimum: not a miss
            assert got[0][7] == "ineligible"
    # C18's day has no usage, so no savings either
    assert query(db, "select coalesce(sum(savings_usd), 0) from marts.daily_savings where tenant = 'C18'") == [(Decimal("0"),)]


def test_unpriced_models_stay_unpriced_never_zero(tmp_path):
    write_jsonl(tmp_path / "logs" / "a.jsonl", [{"ts": "2026-11-20T01:00:00Z", "provider": "openai", "model": "mystery-model-9",
                                                 "response": {"usage": {"prompt_tokens": 10, "completion_tokens": 1}}}])
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert query(db, "select priced, cost_usd, unpriced_reason like 'no price for openai model mystery-model-9%' "
                     "from core.usage_costs") == [(False, None, True)]
    assert query(db, "select requests, unpriced_requests, cost_usd from marts.daily_savings") == [(1, 1, Decimal("0"))]


def test_catalogue_prices_and_long_context_tier_from_the_whole_prompt(tmp_path):
    # claude-sonnet-4-5 in genai-prices: $3 / $0.30 read / $15 out, and a >200K tier ($6 / $0.60 / $22.50) for the whole request
    body = lambda uncached, read: {"type": "message", "model": "claude-sonnet-4-5-20250929",
                                   "usage": {"input_tokens": uncached, "cache_read_input_tokens": read, "output_tokens": 1000}}
    write_jsonl(tmp_path / "logs" / "a.jsonl", [
        {"ts": "2026-11-20T01:00:00Z", "request_id": "small", "response": body(1000, 100_000)},
        {"ts": "2026-11-20T01:00:00Z", "request_id": "long", "response": body(1000, 200_000)}])
    db = run_pipeline(tmp_path, tmp_path / "logs")
    got = dict(query(db, "select request_id, cost_usd from core.usage_costs"))
    assert got["small"] == Decimal("0.003") + Decimal("0.03") + Decimal("0.015")       # 1000x3 + 100000x0.30 + 1000x15
    assert got["long"] == Decimal("0.006") + Decimal("0.12") + Decimal("0.0225")       # 1000x6 + 200000x0.60 + 1000x22.50


def hit_rate_logs(logs, broken_from: date, days: int = 10, per_day: int = 60):
    start = date(2026, 11, 1)
    records = []
    for d in range(days):
        day = start + timedelta(days=d)
        cached = 0 if day >= broken_from else 3000
        for n in range(per_day):
            records.append({"ts": f"{day}T{n % 24:02d}:00:00Z", "provider": "openai", "model": "gpt-4.1",
                            "tenant": "acme", "app": "bot", "request_id": f"{day}-{n}",
                            "response": {"usage": {"prompt_tokens": 4000, "completion_tokens": 10,
                                                   "prompt_tokens_details": {"cached_tokens": cached}}}})
    write_jsonl(logs / "usage.jsonl", records)


def test_hit_rate_drop_fires_on_the_day_it_happens_with_a_stable_id(tmp_path):
    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    alerts = query(db, "select alert_id, day, rule, severity, observed, baseline, lost_savings_usd from marts.cache_alerts order by day")
    assert [a[1] for a in alerts] == [date(2026, 11, 8), date(2026, 11, 9), date(2026, 11, 10)]
    first = alerts[0]
    assert first[2:6] == ("hit_rate_drop", "critical", 0.0, 0.75)
    # gpt-4.1 (genai-prices): input $2.00, cache read $0.50 -> 0.75 x 60 x 4,000 tokens x $1.50/MTok = $0.27
    assert first[6] == Decimal("0.27")
    run_pipeline(tmp_path, tmp_path / "logs")  # a re-run never duplicates alerts
    assert query(db, "select alert_id from marts.cache_alerts order by day") == [(a[0],) for a in alerts]


def test_materializing_a_day_twice_leaves_identical_tables(tmp_path):
    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    before = snapshot(db)
    from pipelines.definitions import defs

    loaded = defs()
    selection = dg.AssetSelection.assets(["core", "usage"], ["core", "usage_costs"], ["marts", "daily_savings"],
                                         ["marts", "prefix_families"], ["marts", "cache_alerts"])
    for _ in range(2):
        result = dg.materialize(list(loaded.assets), resources=dict(loaded.resources), selection=selection,
                                partition_key="2026-11-08", instance=dg.DagsterInstance.ephemeral())
        assert result.success
    assert snapshot(db) == before
    run_pipeline(tmp_path, tmp_path / "logs")  # and a whole second run (files unchanged) too
    assert snapshot(db) == before


def test_a_file_stamped_after_2262_is_staged_not_a_stopped_run(tmp_path):
    # a modification time past what a BIGINT of nanoseconds holds (touch -d 2300-01-01, a clock gone wrong) stopped
    # every run with "Python int too large to convert to C long"; it is stored as the largest, and a second run
    # finds the file unchanged
    import os

    path = write_jsonl(tmp_path / "logs" / "usage.jsonl", [
        {"ts": "2026-11-20T09:00:00Z", "provider": "openai", "model": "gpt-4o", "request_id": "r1",
         "response": {"usage": {"prompt_tokens": 10, "completion_tokens": 1}}}])
    stamp = 10_413_792_000 * 10**9  # 2300-01-01T00:00:00Z in ns: above 2**63 - 1
    os.utime(path, ns=(stamp, stamp))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert query(db, "select rows_accepted, mtime_ns from stage.files") == [(1, 2**63 - 1)]
    staged = query(db, "select staged_at from stage.files")
    run_pipeline(tmp_path, tmp_path / "logs")
    assert query(db, "select staged_at from stage.files") == staged  # unchanged: not read again


def test_a_usage_bucket_counts_in_the_token_hit_rate_not_the_request_hit_rate(tmp_path):
    # a break test: a Usage API bucket of 97 requests is one row whose outcome is 'hit' when any of them read the cache,
    # so the day's request hit rate came out 1.0; a bucket says nothing of how many of its requests did
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "fixtures" / "usage_api" / "openai_completions_1h_page1.json", logs / "page.json")
    write_jsonl(logs / "requests.jsonl", [
        {"ts": "2026-11-20T10:00:00Z", "request_id": f"r{i}", "response": {
            "object": "chat.completion", "model": "gpt-4.1-mini",
            "usage": {"prompt_tokens": 2000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": read}}}}
        for i, read in enumerate((1024, 0, 0, 0))])
    db = run_pipeline(tmp_path, logs)
    got = query(db, "select day::varchar, requests, request_hit_rate from marts.daily_savings where model = 'gpt-4.1-mini' "
                    "order by day")
    (bucket_day, bucket_requests, bucket_rate), (day, requests, rate) = sorted(got, key=lambda r: r[1] == 4)
    assert bucket_requests == 97 and bucket_rate is None  # the page's day, one bucket of 97: no request of its own
    assert (day, requests, rate) == ("2026-11-20", 4, 0.25)  # 1 of the 4 logged requests read the cache
