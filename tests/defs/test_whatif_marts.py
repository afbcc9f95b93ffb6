"""What-if marts on a pipeline run (issue 22, items 1 and 2): a generated Anthropic family whose requests
arrive every 10 minutes, priced from the catalogue (genai-prices), checked against hand computations."""

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from pipelines.lib import report, warehouse
from tests.conftest import query, run_pipeline, write_jsonl, write_prices

START = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
ARRIVALS = 12
GAP = timedelta(minutes=10)  # the issue: a family arriving every 6-50 minutes writes every time under 5m
UNCACHED, CACHED, OUTPUT = 100, 2_000, 50  # tokens per request

# Anthropic's pricing docs (Claude Sonnet 4.5): $3 / MTok input, $15 / MTok output; cache reads are
# 0.1x input, 5-minute cache writes 1.25x input, 1-hour cache writes 2x input. USD per million tokens:
INPUT, OUTPUT_PRICE = Decimal(3), Decimal(15)
READ, WRITE_5M, WRITE_1H = Decimal("0.1") * INPUT, Decimal("1.25") * INPUT, 2 * INPUT
MTOK = Decimal(10) ** 6


def anthropic_request(i: int) -> dict:
    # every request writes its 2,000-token preamble with the default 5-minute TTL, as Anthropic bills a
    # family whose requests come 10 minutes apart (the cache has expired each time)
    return {"ts": (START + i * GAP).isoformat().replace("+00:00", "Z"), "provider": "anthropic",
            "model": "claude-sonnet-4-5", "app": "digest", "request_id": f"digest-{i}",
            "response": {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": [{"type": "text", "text": "ok"}],
                         "usage": {"input_tokens": UNCACHED, "cache_creation_input_tokens": CACHED,
                                   "cache_read_input_tokens": 0, "output_tokens": OUTPUT,
                                   "cache_creation": {"ephemeral_5m_input_tokens": CACHED,
                                                      "ephemeral_1h_input_tokens": 0}}}}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("whatif")
    write_jsonl(tmp / "logs" / "digest.jsonl", [anthropic_request(i) for i in range(ARRIVALS)])
    return run_pipeline(tmp, tmp / "logs")


def ttl_row(db, option):
    rows = query(db, "select current_ttl, requests, cache_read_tokens, cache_write_tokens, cost_now_usd, cost_usd, "
                     "saving_usd from marts.whatif_cache_ttl where ttl_option = $o", {"o": option})
    assert len(rows) == 1
    return rows[0]


def test_the_one_hour_options_cost_equals_the_hand_computation(db):
    per_request = UNCACHED * INPUT + OUTPUT * OUTPUT_PRICE
    now = ARRIVALS * (per_request + CACHED * WRITE_5M) / MTOK
    # 1 hour: the first request writes at 2x input, each later one (10 minutes after the last read,
    # which refreshed the TTL) reads its preamble at 0.1x input
    one_hour = (ARRIVALS * per_request + CACHED * WRITE_1H + (ARRIVALS - 1) * CACHED * READ) / MTOK
    assert (now, one_hour) == (Decimal("0.1026"), Decimal("0.0312"))
    assert ttl_row(db, "1h") == ("5m", ARRIVALS, (ARRIVALS - 1) * CACHED, CACHED, now, one_hour, now - one_hour)


def test_the_five_minute_option_writes_every_time_and_costs_what_was_billed(db):
    current, requests, reads, writes, now, cost, saving = ttl_row(db, "5m")
    assert (reads, writes) == (0, ARRIVALS * CACHED)
    assert cost == now and saving == 0


def test_the_routing_mart_replays_the_family_over_cards(db):
    rows = {(cards, policy): (hit_rate, prefill, copies) for cards, policy, hit_rate, prefill, copies in query(
        db, "select cards, policy, token_hit_rate, prefill_tokens, resident_copies_max from marts.whatif_routing")}
    prompt = ARRIVALS * (UNCACHED + CACHED)
    # round robin over 4 cards: each card writes the preamble once, the other 8 arrivals read it
    assert rows[(4, "round_robin")] == ((ARRIVALS - 4) * CACHED / prompt, prompt - (ARRIVALS - 4) * CACHED, 4)
    assert rows[(4, "prefix_hash")] == ((ARRIVALS - 1) * CACHED / prompt, prompt - (ARRIVALS - 1) * CACHED, 1)
    assert rows[(4, "prefix_hash_split_hot")][2] == 2
    assert {cards for cards, _ in rows} == {4, 8}


def test_the_report_lists_the_switch_with_its_dollars_per_day(db):
    with warehouse.connect(db, read_only=True) as conn:
        data = report.load(conn, days=30)
    switches = data.whatif["ttl"]
    assert switches[["app", "current_ttl", "switch_to", "days"]].values.tolist() == [["digest", "5m", "1h", 1]]
    assert switches["saving_per_day_usd"].tolist() == [pytest.approx(0.0714)]
    page = report.render_html(data)
    for title in ("What if: routing by prefix", "What if: a longer cache TTL", "What if: KV memory"):
        assert title in page
    assert "$0.07" in page


def test_the_cli_replays_the_warehouses_usage_like_the_mart(db, tmp_path):
    import json

    from tests.test_cli import cachemeter

    done = cachemeter("whatif", "routing", "--db", str(db), "--cards", "4", "--policy", "round_robin",
                      "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["token_hit_rate"], result["prefill_tokens"]) == query(
        db, "select token_hit_rate, prefill_tokens from marts.whatif_routing where cards = 4 and policy = 'round_robin'")[0]


def test_a_family_priced_without_a_cache_read_price_keeps_its_rows(tmp_path):
    # a --prices override may leave the cache read price empty: requests that read nothing are still priced
    # (the rows stay, each option's cost unknown, null, never zero), as before the mart summed per price
    write_jsonl(tmp_path / "logs" / "digest.jsonl", [anthropic_request(i) for i in range(2)])
    prices = write_prices(tmp_path / "prices.csv", [{
        "provider": "anthropic", "model": "claude-sonnet-4-5", "effective_from": "2026-01-01",
        "input_per_mtok": "3", "cache_write_5m_per_mtok": "3.75", "cache_write_1h_per_mtok": "6", "output_per_mtok": "15"}])
    db = run_pipeline(tmp_path, tmp_path / "logs", prices)
    rows = query(db, "select ttl_option, requests, cache_read_tokens, cache_write_tokens, cost_now_usd, cost_usd "
                     "from marts.whatif_cache_ttl order by ttl_option")
    now = 2 * (UNCACHED * INPUT + CACHED * WRITE_5M + OUTPUT * OUTPUT_PRICE) / MTOK
    # 10 minutes apart: under 1 hour the second request would read, under 5 minutes it writes again
    assert rows == [("1h", 2, CACHED, CACHED, now, None), ("5m", 2, 0, 2 * CACHED, now, None)]
