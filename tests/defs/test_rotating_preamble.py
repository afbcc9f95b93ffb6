"""rotating_preamble detection end to end: logged bodies, pinned cache reads, real traces, privacy."""

import random
import shutil
from datetime import date, timedelta
from decimal import Decimal

import pytest

from fixtures import preamble_logs
from pipelines.lib import warehouse
from tests.conftest import TABLES, query, run_pipeline, snapshot, write_jsonl, write_prices


@pytest.fixture(scope="module")
def two_weeks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two_weeks")
    truth = preamble_logs.write(tmp / "logs")
    return truth, run_pipeline(tmp, tmp / "logs")


def test_fires_once_on_the_deploy_day_at_the_right_offset(two_weeks):
    truth, db = two_weeks
    alerts = query(db, "select day, first_day, app, divergence_offset_chars, divergence_offset_tokens, divergence_span, message "
                       "from marts.cache_alerts where rule = 'rotating_preamble'")
    assert len(alerts) == 1
    day, first_day, app, offset_chars, offset_tokens, span, message = alerts[0]
    assert day == first_day == truth["deploy_day"] and app == "support-bot"
    assert abs(offset_chars - truth["timestamp_at"]) <= 50 and offset_tokens == offset_chars // 4
    assert span == "digits and separators, 20 chars: looks like a timestamp"
    assert "rotating preamble since 2026-11-08" in message and "char 1,200" in message


def test_lost_savings_match_the_hand_computed_figure(two_weeks):
    truth, db = two_weeks
    days = truth["days"]
    deploy = truth["deploy_day"]
    before = [deploy - timedelta(days=n) for n in range(1, 8)]
    baseline = sum(days[("support-bot", d)]["cached"] for d in before) / sum(days[("support-bot", d)]["prompt"] for d in before)
    # gpt-4.1 in genai-prices: input $2.00, cache read $0.50 per MTok -> $1.50 per MTok of missed reads
    prompt = days[("support-bot", deploy)]["prompt"]
    expected = (Decimal(baseline).quantize(Decimal("1e-9")) * prompt * Decimal("1.50") / 10**6).quantize(Decimal("1e-15"))
    (lost, observed, got_baseline), = query(db, "select lost_savings_usd, observed, baseline from marts.cache_alerts "
                                              "where rule = 'rotating_preamble'")
    assert observed == 0.0 and got_baseline == pytest.approx(baseline, rel=1e-12)
    assert lost == expected


def test_the_stable_app_raises_no_alert_and_the_cause_mutes_the_generic_rule(two_weeks):
    _, db = two_weeks
    assert query(db, "select count(*) from marts.cache_alerts where app = 'search'") == [(0,)]
    # hit_rate_drop would repeat daily for support-bot; the open incident already explains it
    assert query(db, "select count(*) from marts.cache_alerts where rule = 'hit_rate_drop'") == [(0,)]


def test_prefix_families_come_from_the_body_fingerprint(two_weeks):
    _, db = two_weeks
    families = dict(query(db, "select app, count(distinct prefix_family) from core.usage "
                              "where day < '2026-11-08' group by app"))
    assert families == {"search": 1, "support-bot": 1}
    assert query(db, "select count(*) from core.usage where prefix_family not like 'fp:%'") == [(0,)]


def test_the_two_weeks_on_a_local_ducklake_build_the_tables_of_the_duckdb_file(two_weeks, tmp_path):
    # issue 20: the same SQL on a DuckLake (local catalog file, local data path) gives the same tables,
    # the incidents included, on the rotating-preamble set as on the demo (tests/defs/test_ducklake.py)
    _, db = two_weeks
    target = f"ducklake:{tmp_path / 'cachemeter.ducklake'}"
    run_pipeline(tmp_path, db.parent / "logs", db=target)
    in_file, in_lake = snapshot(db), snapshot(target)
    assert len(in_file["marts.cache_alerts"]) >= 1 and len(in_file["core.usage"]) > 1000
    for table in TABLES:
        assert in_lake[table] == in_file[table], table
    incidents = "select rule, app, opened_day, resolved_day from marts.cache_incidents order by all"
    with warehouse.connect(target, read_only=True) as conn:
        assert conn.execute(incidents).fetchall() == query(db, incidents) != []


def test_request_text_never_reaches_the_warehouse(tmp_path):
    secret = "PLANTED-SECRET-d41d8cd98f"
    records = [{"ts": f"2026-11-20T0{n}:00:00Z", "provider": "openai", "model": "gpt-4.1", "app": "a", "request_id": f"s{n}",
                "request": {"messages": [{"role": "system", "content": "Be brief. " * 100 + secret},
                                         {"role": "user", "content": f"question {n} {secret}"}]},
                "response": {"choices": [{"message": {"content": secret}}],
                             "usage": {"prompt_tokens": 300, "completion_tokens": 5}}} for n in range(5)]
    write_jsonl(tmp_path / "logs" / "a.jsonl", records)
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert query(db, "select count(*), count(rendered_chars) from core.usage") == [(5, 5)]
    assert secret.encode() not in db.read_bytes()
    wal = db.with_name(db.name + ".wal")
    assert not wal.exists() or secret.encode() not in wal.read_bytes()


def pinned_read_logs(logs, begins: date, days: int = 12):
    """DeepSeek-style rows, no bodies: reads track the prompt until a change pins them at 1,024 tokens."""
    rng = random.Random(3)
    records = []
    for d in range(days):
        day = date(2026, 11, 1) + timedelta(days=d)
        for n in range(60):
            prompt = 3000 + rng.randint(0, 2000)
            read = 1024 if day >= begins else prompt - rng.randint(100, 600)
            records.append({"ts": f"{day}T{n % 24:02d}:{n % 60:02d}:00Z", "provider": "deepseek", "model": "deepseek-chat",
                            "tenant": "t", "app": "tagger", "request_id": f"{day}-{n}",
                            "response": {"usage": {"prompt_tokens": prompt, "completion_tokens": 20,
                                                   "prompt_cache_hit_tokens": read, "prompt_cache_miss_tokens": prompt - read}}})
    write_jsonl(logs / "ds.jsonl", records)


def test_pinned_cache_reads_without_bodies_alert_on_the_day_they_begin(tmp_path):
    pinned_read_logs(tmp_path / "logs", begins=date(2026, 11, 9))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    alerts = query(db, "select day, rule, divergence_offset_chars, message from marts.cache_alerts order by day")
    assert [(a[0], a[1]) for a in alerts] == [(date(2026, 11, 9), "rotating_preamble")]
    assert alerts[0][2] is None and "cache reads pinned at one size in 100% of hits" in alerts[0][3]


@pytest.mark.parametrize("trace", ["conversation_trace.jsonl", "synthetic_trace.jsonl"])
def test_no_rotating_preamble_on_the_real_mooncake_traces(tmp_path, shared, trace):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(shared / "data" / "mooncake_fast25" / trace, logs)
    (logs / "source.yaml").write_text("provider: self_hosted\nmodel: kimi\ntrace_start: 2026-11-27T00:00:00Z\n")
    prices = write_prices(tmp_path / "p.csv", [{"provider": "self_hosted", "model": "kimi", "effective_from": "2026-01-01",
                                                "input_per_mtok": "0.60", "cache_read_per_mtok": "0.15", "output_per_mtok": "2.50"}])
    db = run_pipeline(tmp_path, logs, prices)
    assert query(db, "select count(*) from marts.cache_alerts") == [(0,)]  # no false alert of any rule
    # families come from the block-hash chain: the first two blocks (the conversation trace shares block 0 everywhere)
    families = query(db, "select count(distinct prefix_family), min(prefix_family like 'blk:%') from core.usage")[0]
    assert families[1] is True and families[0] > 100


def test_prefix_families_mart_reports_openings_hit_rate_and_lost_savings(two_weeks):
    truth, db = two_weeks
    rows = query(db, "select day, app, requests, distinct_openings, token_hit_rate, baseline_hit_rate, lost_savings_usd "
                     "from marts.prefix_families where app = 'support-bot' and day in ('2026-11-07', '2026-11-08') order by day")
    before, after = rows
    assert before[3] == 1 and before[2] == 80
    # from the deploy on, every request opens differently, and its family (first 512 chars) still holds them all
    assert after[3] == 80 and after[4] == 0.0 and after[6] > 0
    stable = query(db, "select max(distinct_openings), sum(lost_savings_usd) > 0 from marts.prefix_families where app = 'search'")
    assert stable[0][0] == 1
