"""The assets end to end through Dagster (in-process): costs, savings, alerts, idempotent partitions."""

import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import dagster as dg

from tests.conftest import query, run_pipeline, snapshot, write_jsonl, write_prices


def test_definitions_load_with_assets_schedule_and_job():
    from pipelines.definitions import defs

    loaded = defs()
    keys = {k.to_user_string() for k in loaded.resolve_all_asset_keys()}
    assert keys == {"stage/usage_rows", "core/quarantine", "core/prices", "core/cache_minimums", "core/usage",
                    "core/usage_costs", "marts/daily_savings", "marts/prefix_families", "marts/cache_alerts",
                    "publish/warehouse_snapshot", "publish/cache_report"}
    assert loaded.resolve_job_def("cachemeter_nightly") is not None
    assert loaded.resolve_schedule_def("nightly_schedule") is not None
    assert loaded.resolve_sensor_def("alert_webhook_sensor") is not None
    assert loaded.resolve_sensor_def("late_logs_sensor") is not None
    from pipelines.defs.jobs import nightly_schedule

    request = nightly_schedule(dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 29, 2, 30, tzinfo=timezone.utc)))
    assert request.partition_key == "2026-11-28"


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


COVERED_CASES = ["C01", "C02", "C04", "C05", "C08", "C09", "C11", "C13", "C14", "C15", "C17"]
# Not yet readable: C03 (streamed SSE events), C06 (OpenRouter body), C07 (OpenInference span), C10 (LangChain
# usage_metadata), C12 (Message Batches result), C16 (Vercel AI SDK usage), C18 (vLLM engine log, no cost).
CASE_PROVIDER = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "gemini_vertex": "gemini",
                 "azure_openai": "azure", "deepseek": "deepseek"}
PRICE_KEYS = {"input_uncached": "input_per_mtok", "cache_read": "cache_read_per_mtok",
              "cache_write_5m": "cache_write_5m_per_mtok", "cache_write_1h": "cache_write_1h_per_mtok", "output": "output_per_mtok"}
TOKEN_COLUMNS = {"input_uncached": "uncached_input_tokens", "cache_read": "cache_read_tokens",
                 "cache_write_5m": "cache_write_5m_tokens", "cache_write_1h": "cache_write_1h_tokens", "output": "output_tokens"}


def test_cost_cases_from_public_bug_reports_reproduce_exactly(tmp_path, shared):
    cases = json.loads((shared / "cases" / "cost_cases.json").read_text())
    covered = [c for c in cases if c["provider"] in CASE_PROVIDER and ("usage" in c["payload"] or "usageMetadata" in c["payload"])
               and "providerMetadata" not in c["payload"]]
    assert [c["case"] for c in covered] == COVERED_CASES
    logs = tmp_path / "logs"
    envelopes, price_rows = [], []
    for index, case in enumerate(covered):
        provider = CASE_PROVIDER[case["provider"]]
        model = f"{case['payload']['model']}"
        envelopes.append({"ts": "2026-06-01T12:00:00Z", "provider": provider, "model": model,
                          "tenant": case["case"], "request_id": case["case"], "response": case["payload"]})
        price_rows.append({"provider": provider, "model": model, "effective_from": "2020-01-01",
                           **{PRICE_KEYS[k]: repr(v) for k, v in case["prices_per_mtok"].items()}})
    # one override per (provider, model): cases sharing a model with different prices get their own tenant-specific day
    seen = {}
    for index, row in enumerate(price_rows):
        key = (row["provider"], row["model"])
        assert key not in seen, f"two cases price {key}; give them distinct models"
        seen[key] = index
    write_jsonl(logs / "cases.jsonl", envelopes)
    db = run_pipeline(tmp_path, logs, write_prices(tmp_path / "prices.csv", price_rows))
    for case in covered:
        got = query(db, "select u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens, "
                        "u.output_tokens, c.cost_usd, c.priced from core.usage u join core.usage_costs c using (request_id) "
                        "where request_id = $id", {"id": case["case"]})
        assert len(got) == 1, case["case"]
        tokens = dict(zip(TOKEN_COLUMNS, got[0][:5]))
        expected_tokens = {k: case["expected"]["billable_tokens"].get(k, 0) for k in TOKEN_COLUMNS}
        assert tokens == expected_tokens, (case["case"], case["id"])
        assert got[0][6] is True and got[0][5] == Decimal(str(case["expected"]["cost_usd"])), (case["case"], got[0][5])


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
