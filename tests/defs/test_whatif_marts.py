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


def anthropic_request(i: int, app: str = "digest", at: datetime | None = None, read: int = 0,
                      write_5m: int = CACHED, write_1h: int = 0) -> dict:
    # by default every request writes its 2,000-token preamble with the default 5-minute TTL, as Anthropic
    # bills a family whose requests come 10 minutes apart (the cache has expired each time)
    ts = at or START + i * GAP
    return {"ts": ts.isoformat().replace("+00:00", "Z"), "provider": "anthropic",
            "model": "claude-sonnet-4-5", "app": app, "request_id": f"{app}-{i}",
            "response": {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": [{"type": "text", "text": "ok"}],
                         "usage": {"input_tokens": UNCACHED, "cache_creation_input_tokens": write_5m + write_1h,
                                   "cache_read_input_tokens": read, "output_tokens": OUTPUT,
                                   "cache_creation": {"ephemeral_5m_input_tokens": write_5m,
                                                      "ephemeral_1h_input_tokens": write_1h}}}}


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
    assert switches["match_rate"].tolist() == [1.0]  # no request came inside 5 minutes: nothing says a read would miss
    page = report.render_html(data)
    for title in ("What if: routing by prefix", "What if: a longer cache TTL", "What if: KV memory"):
        assert title in page
    assert "$0.07" in page and "<td>100.0%</td>" in page


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


# The replay is anchored on the log: the current TTL's option costs what was billed, and a longer TTL keeps
# an expired entry alive only at the share of reads the family got while its entry was alive.
MINUTE = timedelta(minutes=1)


def at_minutes(*minutes: int) -> list[datetime]:
    return [START + m * MINUTE for m in minutes]


@pytest.fixture(scope="module")
def anchored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anchored")
    records = []
    # a rotating preamble: five requests 2 minutes apart each write the whole opening (it changed every
    # time, so a live entry never matched), then five 10 minutes apart write it too
    for i, ts in enumerate(at_minutes(0, 2, 4, 6, 8, 18, 28, 38, 48, 58)):
        records.append(anthropic_request(i, "rotating", ts))
    # a family that matched 2 of the 3 times its entry was alive (2 minutes apart), then came 10 minutes late
    for i, (ts, read) in enumerate(zip(at_minutes(0, 2, 4, 6, 16), (0, CACHED, 0, CACHED, 0))):
        records.append(anthropic_request(i, "partial", ts, read=read, write_5m=CACHED - read))
    # a family on 1-hour writes whose requests come 10 minutes apart and read each time
    for i, ts in enumerate(at_minutes(0, 10, 20, 30)):
        records.append(anthropic_request(i, "hourly", ts, read=CACHED if i else 0, write_5m=0,
                                         write_1h=0 if i else CACHED))
    # three requests logged in one second, the write first in the log, its id sorting last, then one 20 minutes on
    for i, (ts, read) in zip((9, 1, 2, 3), zip(at_minutes(0, 0, 0, 20), (0, CACHED, CACHED, 0))):
        records.append(anthropic_request(i, "ties", ts, read=read, write_5m=CACHED - read))
    # a 1-hour entry written the evening before, read every 20 minutes after midnight: a day that writes nothing
    evening = START.replace(day=19, hour=23, minute=50)
    records.append(anthropic_request(0, "readsonly", evening, write_5m=0, write_1h=CACHED))
    for i in (1, 2, 3):
        records.append(anthropic_request(i, "readsonly", evening + i * 20 * MINUTE, read=CACHED, write_5m=0))
    write_jsonl(tmp / "logs" / "families.jsonl", records)
    return run_pipeline(tmp, tmp / "logs")


def option_rows(db, app, day="2026-11-20"):
    return {option: rest for option, *rest in query(
        db, "select ttl_option, current_ttl, cache_read_tokens, cache_write_tokens, cost_now_usd, cost_usd, saving_usd "
            "from marts.whatif_cache_ttl where app = $app and day = $day", {"app": app, "day": day})}


def match_rates(db, app, day="2026-11-20"):
    return {rate for (rate,) in query(db, "select match_rate from marts.whatif_cache_ttl where app = $app and day = $day",
                                      {"app": app, "day": day})}


@pytest.mark.parametrize("app, current", [("rotating", "5m"), ("partial", "5m"), ("hourly", "1h"), ("digest", "5m"),
                                          ("ties", "5m"), ("readsonly", "1h")])
def test_the_current_ttls_option_costs_what_the_requests_cost_now(anchored, db, app, current):
    rows = option_rows(db if app == "digest" else anchored, app)
    _, reads, writes, now, cost, saving = rows[current]
    assert rows[current][0] == current and cost == now and saving == 0


def test_a_rotating_preamble_gains_nothing_from_a_longer_ttl(anchored):
    # every request wrote although its entry was alive 4 times out of 4: the match rate is 0, so the hour
    # keeps nothing worth reading and every write costs 2x input instead of 1.25x (Anthropic's pricing docs)
    current, reads, writes, now, cost, saving = option_rows(anchored, "rotating")["1h"]
    assert (current, reads, writes) == ("5m", 0, 10 * CACHED)
    assert match_rates(anchored, "rotating") == {0.0}
    assert saving == -10 * CACHED * (WRITE_1H - WRITE_5M) / MTOK == Decimal("-0.045")


def test_a_longer_ttl_keeps_an_expired_entry_at_the_familys_match_rate(anchored):
    # alive 3 times (2 minutes apart), read 2 of them: the late request reads 2/3 of its 2,000 tokens
    # (1,333, half up) under 1 hour; the 2 reads it did are kept
    current, reads, writes, now, cost, saving = option_rows(anchored, "partial")["1h"]
    late_reads = 1_333
    assert [rate for rate in match_rates(anchored, "partial")] == [pytest.approx(2 / 3)]
    assert (current, reads, writes) == ("5m", 2 * CACHED + late_reads, 5 * CACHED - 2 * CACHED - late_reads)
    per_request = UNCACHED * INPUT + OUTPUT * OUTPUT_PRICE
    assert cost == (5 * per_request + reads * READ + writes * WRITE_1H) / MTOK
    assert now == (5 * per_request + 2 * CACHED * READ + 3 * CACHED * WRITE_5M) / MTOK


def test_a_shorter_ttl_lets_the_entries_the_hour_kept_expire(anchored):
    # 10 minutes apart under 5 minutes: each of the three reads becomes a 5-minute write
    current, reads, writes, now, cost, saving = option_rows(anchored, "hourly")["5m"]
    assert (current, reads, writes) == ("1h", 0, 4 * CACHED)
    assert match_rates(anchored, "hourly") == {1.0}  # inside its hour every entry was read
    per_request = UNCACHED * INPUT + OUTPUT * OUTPUT_PRICE
    assert now == (4 * per_request + CACHED * WRITE_1H + 3 * CACHED * READ) / MTOK
    assert cost == (4 * per_request + 4 * CACHED * WRITE_5M) / MTOK and saving < 0


def test_requests_logged_in_the_same_second_replay_in_log_order(anchored):
    # by id the write would come after the two reads (its id sorts last) and the match rate would be 1/2
    current, reads, writes, now, cost, saving = option_rows(anchored, "ties")["1h"]
    assert match_rates(anchored, "ties") == {1.0}
    assert (current, reads, writes) == ("5m", 3 * CACHED, CACHED)


def test_a_day_that_only_reads_an_entry_older_than_5_minutes_is_on_1_hour(anchored):
    # no write that day, but reads 20 minutes apart: only a 1-hour entry lives that long, so the day is on 1 hour
    # and 5 minutes would let each entry expire: three 5-minute writes instead of three reads
    current, reads, writes, now, cost, saving = option_rows(anchored, "readsonly")["5m"]
    assert (current, reads, writes) == ("1h", 0, 3 * CACHED)
    assert saving == 3 * CACHED * (READ - WRITE_5M) / MTOK == Decimal("-0.0207")
    assert option_rows(anchored, "readsonly", "2026-11-19")["5m"][0] == "1h"  # the evening's 1-hour write


def test_a_day_replayed_before_the_replay_was_anchored_is_rebuilt_on_the_next_run(tmp_path):
    # a warehouse from before the match rate: its rows credited the rotating family reads under 1 hour
    import duckdb

    from tests.conftest import snapshot

    write_jsonl(tmp_path / "logs" / "rotating.jsonl",
                [anthropic_request(i, "rotating", ts) for i, ts in enumerate(at_minutes(0, 2, 4, 30))])
    db = run_pipeline(tmp_path, tmp_path / "logs")
    clean = snapshot(db)
    with duckdb.connect(str(db)) as conn:
        conn.execute("update marts.whatif_cache_ttl set match_rate = null, cache_read_tokens = 2000, "
                     "saving_usd = 0.005 where ttl_option = '1h'")
        conn.execute("delete from stage.definitions_version")  # files from an older release

    run_pipeline(tmp_path, tmp_path / "logs")  # the logs unchanged: only the migration can mark the day pending

    assert snapshot(db) == clean
    assert match_rates(db, "rotating") == {0.0}


def test_a_request_left_unpriced_is_still_the_previous_request_of_the_next(tmp_path):
    # a --prices row without a read price leaves the read at minute 4 unpriced: it is out of the sums, but the
    # write at minute 8 came 4 minutes after it (alive under 5 minutes, and written: a miss), not 8 after the first
    write_jsonl(tmp_path / "logs" / "digest.jsonl", [
        anthropic_request(0, at=START), anthropic_request(1, at=START + 4 * MINUTE, read=CACHED, write_5m=0),
        anthropic_request(2, at=START + 8 * MINUTE)])
    prices = write_prices(tmp_path / "prices.csv", [{
        "provider": "anthropic", "model": "claude-sonnet-4-5", "effective_from": "2026-01-01",
        "input_per_mtok": "3", "cache_write_5m_per_mtok": "3.75", "cache_write_1h_per_mtok": "6", "output_per_mtok": "15"}])
    db = run_pipeline(tmp_path, tmp_path / "logs", prices)
    rows = query(db, "select ttl_option, requests, match_rate, cache_read_tokens, cache_write_tokens "
                     "from marts.whatif_cache_ttl order by ttl_option")
    # by the priced requests alone the write at minute 8 would read under 1 hour (8 minutes after the first)
    assert rows == [("1h", 2, 0.0, 0, 2 * CACHED), ("5m", 2, 0.0, 0, 2 * CACHED)]
