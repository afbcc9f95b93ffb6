"""Billed cost as the truth: a row that carries what was billed costs that (FOCUS BilledCost), the catalogue
price is its list cost, and bills that consistently disagree with the list raise price_mismatch."""

import shutil
from decimal import Decimal

import pytest

from tests.conftest import REPO, query, run_pipeline

FIXTURE = REPO / "fixtures" / "billed" / "openrouter_responses_gpt-5.6-sol.jsonl"
# what the catalogue needs to price these rows as OpenRouter billed them ($5 / $0.50 / $6.25 / $30 per MTok;
# genai-prices 0.2.3 has $4 / $0.40 / $5 / $20 and prices a 1-hour write at the write rate)
OVERRIDE_LINE = "openrouter,openai/gpt-5.6-sol,2026-11-20,5,0.5,6.25,6.25,30"


@pytest.fixture(scope="module")
def billed_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("billed")
    logs = tmp / "logs"
    logs.mkdir()
    shutil.copy(FIXTURE, logs / FIXTURE.name)
    return tmp, logs, run_pipeline(tmp, logs)


def test_openrouter_responses_rows_cost_what_openrouter_billed(billed_run):
    _, _, db = billed_run
    rows = query(db, "select u.request_id, u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, "
                     "u.output_tokens, c.price_model, c.cost_basis, c.cost_usd, c.list_cost_usd, c.savings_usd, "
                     "c.no_cache_cost_usd from core.usage u join core.usage_costs c using (request_id) order by u.ts")
    write, read = rows
    # 500 x 5 + 2,500 x 6.25 + 125 x 30 (billed); 500 x 4 + 2,500 x 5 + 125 x 20 (list), per MTok
    assert write[:9] == ("gen-1795683600-sol1", 500, 0, 2500, 125, "openai/gpt-5.6-sol", "billed",
                         Decimal("0.021875"), Decimal("0.017"))
    # 600 x 5 + 2,500 x 0.50 + 75 x 30 (billed); 600 x 4 + 2,500 x 0.40 + 75 x 20 (list)
    assert read[:9] == ("gen-1795683720-sol2", 600, 2500, 0, 75, "openai/gpt-5.6-sol", "billed",
                        Decimal("0.0065"), Decimal("0.0049"))
    # savings at the rates the bill implies: the list saving x billed / list of the row, and the identity holds
    list_saving_read = Decimal(2500) * (Decimal("4") - Decimal("0.4")) / 10**6          # $0.009
    assert read[9] == round(list_saving_read * Decimal("0.0065") / Decimal("0.0049"), 12)
    list_saving_write = -Decimal(2500) * (Decimal("5") - Decimal("4")) / 10**6          # the write premium, $0.0025
    assert write[9] == round(list_saving_write * Decimal("0.021875") / Decimal("0.017"), 12)
    assert all(r[10] - r[7] == r[9] for r in rows)
    day = query(db, "select cost_usd, list_cost_usd, billed_requests, savings_usd, no_cache_cost_usd from marts.daily_savings")
    assert day == [(Decimal("0.028375"), Decimal("0.0219"), 2, write[9] + read[9], Decimal("0.028375") + write[9] + read[9])]


def test_consistent_gap_raises_price_mismatch_with_the_implied_rates_and_the_override_line(billed_run):
    _, _, db = billed_run
    recon = query(db, "select rows_reported, reported_cost_usd, computed_cost_usd, price_model, ratio_basis, "
                      "prompt_rate_ratio, output_rate_ratio, implied_prices_line from marts.cost_reconciliation")
    assert len(recon) == 1
    rows, billed, listed, price_model, basis, prompt_ratio, output_ratio, line = recon[0]
    assert (rows, billed, listed, price_model, basis) == (2, Decimal("0.028375"), Decimal("0.0219"),
                                                          "openai/gpt-5.6-sol", "prompt_and_output")
    # two rows with different prompt/output mixes solve both ratios: 5/4 and 30/20
    assert prompt_ratio == pytest.approx(1.25, rel=1e-9) and output_ratio == pytest.approx(1.5, rel=1e-9)
    assert line == OVERRIDE_LINE
    alerts = query(db, "select rule, severity, provider, model, observed, baseline, message from marts.cache_alerts "
                       "where rule in ('price_mismatch', 'cost_mismatch')")
    # the day's gap is $0.006475, under cost_mismatch's $0.01, but 22.8% of the bill on both rows: critical (>= 20%)
    assert [a[:6] for a in alerts] == [("price_mismatch", "critical", "openrouter", "openai/gpt-5.6-sol", 0.0219, 0.028375)]
    message = alerts[0][6]
    assert message.startswith("openrouter openai/gpt-5.6-sol: billed 0.028375 USD is 22.8% above the list price "
                              "(0.021900 USD) on 2 of 2 billed rows")
    assert "input 5, cache read 0.5, cache write 6.25 (1h 6.25), output 30 USD/MTok" in message
    assert message.endswith(f"add to --prices: {OVERRIDE_LINE}")


def test_the_override_line_makes_the_list_price_the_bill(billed_run, tmp_path):
    _, logs, _ = billed_run
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,"
                      f"cache_write_1h_per_mtok,output_per_mtok\n{OVERRIDE_LINE}\n")
    db = run_pipeline(tmp_path, logs, prices)
    assert query(db, "select list_cost_usd, cost_usd from core.usage_costs order by request_id") == [
        (Decimal("0.021875"), Decimal("0.021875")), (Decimal("0.0065"), Decimal("0.0065"))]
    # billed = list: the savings are the list savings, unscaled, and nothing fires
    assert query(db, "select savings_usd from core.usage_costs where cache_outcome = 'hit'") == [
        (Decimal(2500) * Decimal("4.5") / 10**6,)]
    assert query(db, "select count(*) from marts.cache_alerts where rule in ('price_mismatch', 'cost_mismatch')") == [(0,)]
