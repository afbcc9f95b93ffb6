"""marts.ttft_by_family (issue 22 item 3): median and p95 time to first token of cache hits against
misses, on canonical rows with hand-picked TTFTs; the percentiles are worked out by hand below."""

from datetime import date, datetime, timezone
from decimal import Decimal

import pytest

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from pipelines.lib.sql import statement

HITS = [200, 220, 250, 300, 1000]  # ms; read 2,000 tokens from cache
MISSES = [900, 1100, 1500]  # ms; read nothing
HEADER = "request_id,ts,provider,model,app,uncached_input_tokens,cache_read_tokens,output_tokens,latency_ms,ttft_ms\n"


def rows() -> str:
    lines = [f"h{i},2026-11-20T09:{i:02d}:00Z,anthropic,claude-sonnet-4-5,chat,50,2000,40,{t + 1000},{t}"
             for i, t in enumerate(HITS)]
    lines += [f"m{i},2026-11-20T10:{i:02d}:00Z,anthropic,claude-sonnet-4-5,chat,2050,0,40,{t + 1000},{t}"
              for i, t in enumerate(MISSES)]
    lines.append("bad,2026-11-20T11:00:00Z,anthropic,claude-sonnet-4-5,chat,50,2000,40,,-5")  # kept, not measured
    lines.append("quiet,2026-11-20T12:00:00Z,anthropic,claude-sonnet-4-5,batch,50,2000,40,,")  # logs no latency
    return HEADER + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def mart(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ttft")
    (tmp / "logs").mkdir()
    (tmp / "logs" / "usage.csv").write_text(rows(), encoding="utf-8")
    conn = warehouse.connect(tmp / "w.duckdb")
    ingest.stage_logs(conn, tmp / "logs", latest=datetime(2030, 1, 1, tzinfo=timezone.utc))
    params = {"start": date(2026, 11, 20), "end": date(2026, 11, 21)}
    conn.execute(statement("marts/ttft_by_family__insert_window"), params)
    conn.execute(statement("marts/ttft_by_family__delete_window"), params)  # a rebuild replaces, never doubles
    conn.execute(statement("marts/ttft_by_family__insert_window"), params)
    cursor = conn.execute("select * from marts.ttft_by_family")
    names = [d[0] for d in cursor.description]
    found = [dict(zip(names, r)) for r in cursor.fetchall()]
    conn.close()
    return found


def test_median_and_p95_of_hits_and_misses_equal_the_hand_computation(mart):
    assert len(mart) == 1  # the batch app logged no latency: no row
    row = mart[0]
    assert (row["app"], row["ttft_requests"], row["hit_requests"], row["miss_requests"]) == ("chat", 8, 5, 3)
    # hits 200, 220, 250, 300, 1000: median the 3rd value; p95 at rank 1 + 0.95 x 4 = 4.8, i.e.
    # 300 + 0.8 x (1000 - 300) = 860
    assert (row["hit_ttft_median_ms"], row["hit_ttft_p95_ms"]) == (Decimal("250"), Decimal("860"))
    # misses 900, 1100, 1500: median 1100; p95 at rank 1 + 0.95 x 2 = 2.9: 1100 + 0.9 x 400 = 1460
    assert (row["miss_ttft_median_ms"], row["miss_ttft_p95_ms"]) == (Decimal("1100"), Decimal("1460"))
    assert (row["median_ttft_saved_ms"], row["p95_ttft_saved_ms"]) == (Decimal("850"), Decimal("600"))
    # latency = TTFT + 1,000 ms on every row that logged both
    assert (row["hit_latency_median_ms"], row["miss_latency_median_ms"]) == (Decimal("1250"), Decimal("2100"))
    assert row["bad_latency_requests"] == 1  # the negative TTFT: counted, its row kept in core.usage


def test_the_report_shows_measured_ttft_and_estimates_families_without_latency(tmp_path):
    import shutil

    from pipelines.lib import report
    from tests.conftest import REPO, run_pipeline, write_jsonl

    logs = tmp_path / "logs"
    (logs / "litellm").mkdir(parents=True)
    shutil.copy(REPO / "fixtures" / "formats" / "litellm_spend_logs" / "spend_logs.jsonl", logs / "litellm")
    # an Anthropic family reading a 2,000-token preamble three times, logging no latency
    write_jsonl(logs / "bot.jsonl", [{
        "ts": f"2026-11-20T12:0{i}:00Z", "provider": "anthropic", "app": "bot", "request_id": f"bot-{i}",
        "response": {"id": f"msg_{i}", "type": "message", "model": "claude-sonnet-4-5",
                     "usage": {"input_tokens": 30, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 0,
                               "output_tokens": 20}}} for i in range(3)])
    db = run_pipeline(tmp_path, logs)
    with warehouse.connect(db, read_only=True) as conn:
        data = report.load(conn, days=30)
    measured = data.whatif["ttft"]
    # the spend log's two provider calls are both hits: 1,453 ms (Anthropic) and 693 ms (OpenAI)
    assert sorted(measured["hit_median_ms"].tolist()) == [693.0, 1453.0]
    assert measured["miss_median_ms"].isna().all()
    estimate = data.whatif["ttft_estimate"]
    assert estimate[["app", "hits", "cache_read_tokens"]].values.tolist() == [["bot", 3, 6000]]
    # 2 x 70,553,706,496 parameters (llama-3.1-70b) x 6,000 tokens / (989 x 10^12 FLOP/s x 0.5) = 1.712 s
    assert estimate["est_prefill_seconds_saved"].tolist() == [round(2 * 70_553_706_496 * 6000 / (989e12 * 0.5), 3)] == [1.712]
    page = report.render_html(data)
    assert "Time to first token: cache hits against misses" in page and "What if: prefill seconds the cache saved" in page
    assert "1453.0" in page and "1.712" in page
