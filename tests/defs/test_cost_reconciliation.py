"""marts.cost_reconciliation and the cost_mismatch alert: billed (reported) cost against computed cost."""

from decimal import Decimal

from tests.conftest import query, run_pipeline, write_jsonl, write_prices


def canonical_row(request_id: str, day: str, model: str, reported: str) -> dict:
    # 1M uncached input + 100k output at $2 / $8 per million = $2.80 computed
    return {"request_id": request_id, "ts": f"{day}T10:00:00Z", "provider": "openai", "model": model,
            "uncached_input_tokens": 1_000_000, "cache_read_tokens": 0, "cache_write_5m_tokens": 0,
            "cache_write_1h_tokens": 0, "output_tokens": 100_000, "reported_cost_usd": reported}


def test_reported_cost_that_differs_raises_cost_mismatch_and_a_match_raises_nothing(tmp_path):
    logs = tmp_path / "logs"
    write_jsonl(logs / "billing.jsonl", [
        canonical_row("a1", "2026-11-20", "house-a", "2.80"),   # matches exactly
        canonical_row("a2", "2026-11-20", "house-a", "2.80"),
        canonical_row("b1", "2026-11-20", "house-b", "3.10"),   # billed 0.30 more than computed (9.7%)
        canonical_row("b2", "2026-11-21", "house-b", "5.60"),   # billed twice the computed cost: critical
    ])
    prices = write_prices(tmp_path / "prices.csv", [
        {"provider": "openai", "model": m, "effective_from": "2026-01-01", "input_per_mtok": "2", "output_per_mtok": "8"}
        for m in ("house-a", "house-b")])
    db = run_pipeline(tmp_path, logs, prices)
    recon = query(db, "select day::varchar, model, rows_reported, reported_cost_usd, computed_cost_usd, difference_usd "
                      "from marts.cost_reconciliation order by day, model")
    assert recon == [("2026-11-20", "house-a", 2, Decimal("5.6"), Decimal("5.6"), Decimal("0")),
                     ("2026-11-20", "house-b", 1, Decimal("3.1"), Decimal("2.8"), Decimal("0.3")),
                     ("2026-11-21", "house-b", 1, Decimal("5.6"), Decimal("2.8"), Decimal("2.8"))]
    alerts = query(db, "select day::varchar, model, severity, observed, baseline from marts.cache_alerts "
                       "where rule = 'cost_mismatch' order by day")
    # 0.30 / 3.10 = 9.7% (warning below the 10% critical share); 2.80 / 5.60 = 50% (critical); house-a: none
    assert alerts == [("2026-11-20", "house-b", "warning", 2.8, 3.1), ("2026-11-21", "house-b", "critical", 2.8, 5.6)]
    message = query(db, "select message from marts.cache_alerts where rule = 'cost_mismatch' and day = '2026-11-20'")[0][0]
    assert "reports 3.1" in message and "computes 2.8" in message and "9.7%" in message


def test_gateway_reported_costs_that_match_raise_nothing(formats_warehouse):
    # fixtures/formats: LiteLLM spend, Langfuse cost_details, Claude Code costUSD and OpenRouter usage.cost equal the
    # computed catalogue cost, except OpenRouter's BYOK row, whose 5% fee ($0.00144375) is below the $0.01 tolerance
    _, db = formats_warehouse
    got = query(db, "select day::varchar, provider, model, rows_reported, difference_usd from marts.cost_reconciliation "
                    "where difference_usd <> 0")
    assert got == [("2026-11-21", "openrouter", "anthropic/claude-sonnet-4.5", 1, Decimal("0.00144375"))]
    assert query(db, "select count(*) from marts.cost_reconciliation where provider in ('anthropic', 'openai')") == [(4,)]
    assert query(db, "select count(*) from marts.cache_alerts where rule = 'cost_mismatch'") == [(0,)]


def test_a_bill_too_large_for_its_row_is_quarantined_and_the_day_still_builds(tmp_path):
    # break tests: a bill of $10^7 for 1.1M tokens still builds its day, with no implied price line (the rates it
    # implies pass DECIMAL(18, 6), and the day's build failed on that cast on every run); a bill above 10^9 USD for
    # one row (10^23 scaled the savings past DECIMAL(38, 15), the same failure) and a cost spelled "1_000" (DuckDB's
    # cast read it as 1000) are quarantined naming the value; a plain decimal string is a cost
    logs = tmp_path / "logs"
    write_jsonl(logs / "billing.jsonl", [
        canonical_row("huge-bill", "2026-11-20", "house-a", 10_000_000),
        canonical_row("too-large", "2026-11-20", "house-a", 10**23),
        canonical_row("underscores", "2026-11-20", "house-a", "1_000"),
        canonical_row("exponent", "2026-11-20", "house-a", "1e3"),
        canonical_row("plain", "2026-11-20", "house-b", "2.80"),
        canonical_row("billion", "2026-11-20", "house-b", 1_000_000_000),
        {**canonical_row("two-tokens", "2026-11-20", "house-c", 10_000_000), "uncached_input_tokens": 1, "output_tokens": 1},
    ])
    prices = write_prices(tmp_path / "prices.csv", [
        {"provider": "openai", "model": m, "effective_from": "2026-01-01", "input_per_mtok": "2", "output_per_mtok": "8"}
        for m in ("house-a", "house-b", "house-c")])
    db = run_pipeline(tmp_path, logs, prices)
    assert query(db, "select request_id, reported_cost_usd from core.usage order by request_id") == [
        ("billion", Decimal("1000000000")), ("huge-bill", Decimal("10000000")), ("plain", Decimal("2.8")),
        ("two-tokens", Decimal("10000000"))]
    reasons = dict(query(db, "select source_line, reason from core.quarantine"))
    assert reasons == {2: "reported cost is not a number of USD of at most 10^9 (100000000000000000000000)",
                       3: 'reported cost is not a number of USD of at most 10^9 ("1_000")',
                       4: 'reported cost is not a number of USD of at most 10^9 ("1e3")'}
    recon = query(db, "select model, reported_cost_usd, implied_prices_line is null from marts.cost_reconciliation "
                      "order by model")
    # $10^7 for 1 input and 1 output token at $2 / $8 per million: rates about 10^12 times the list, no line
    assert recon == [("house-a", Decimal("10000000"), False), ("house-b", Decimal("1000000002.8"), False),
                     ("house-c", Decimal("10000000"), True)]
