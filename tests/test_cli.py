"""The ``cachemeter`` command as a user runs it: a subprocess on real data and on the bundled demo."""

import json
import shutil
import subprocess
import sys
from decimal import Decimal

from tests.conftest import REPO, query


def cachemeter(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "160"}, timeout=600)


def test_run_on_the_mooncake_conversation_trace_prints_the_days_savings(tmp_path, shared):
    logs = tmp_path / "logs" / "kimi"
    logs.mkdir(parents=True)
    shutil.copy(shared / "data" / "mooncake_fast25" / "conversation_trace.jsonl", logs)
    (logs / "source.yaml").write_text("provider: self_hosted\nmodel: kimi-k2\napp: chat\n"
                                      "trace_start: 2026-11-27T00:00:00Z\nblock_size_tokens: 512\ncache: infinite\n")
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,"
                      "cache_write_1h_per_mtok,output_per_mtok\nself_hosted,kimi-k2,2026-01-01,0.60,0.15,,,2.50\n")
    db = tmp_path / "w.duckdb"
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), "--prices", str(prices), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2026-11-27" in done.stdout and "12,031" in done.stdout and "37.4%" in done.stdout
    # 144,793,823 prompt tokens, 54,098,411 read: 90,695,412 x $0.60 + 54,098,411 x $0.15 + 4,131,253 output x $2.50 (per MTok)
    row = query(db, "select requests, prompt_tokens, cache_read_tokens, output_tokens, cost_usd, no_cache_cost_usd from marts.daily_savings")
    requests, prompt, read, output, cost, no_cache = row[0]
    assert (requests, prompt, read) == (12_031, 144_793_823, 54_098_411)
    assert cost == (Decimal(prompt - read) * Decimal("0.60") + Decimal(read) * Decimal("0.15") + Decimal(output) * Decimal("2.50")) / 10**6
    assert no_cache - cost == Decimal(read) * Decimal("0.45") / 10**6
    # the run wrote its report beside the warehouse and said where; `report --db` writes to the same place
    report = tmp_path / "report.html"
    assert f"report: {report}" in done.stdout.replace("\n", "") and report.stat().st_size > 10_000
    report.unlink()
    again = cachemeter("report", "--db", str(db), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert report.stat().st_size > 10_000 and not (tmp_path / "warehouse").exists()
    # an unchanged re-run rebuilds no day and changes nothing
    rerun = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), "--prices", str(prices), cwd=tmp_path)
    assert rerun.returncode == 0 and "no day was rebuilt" in rerun.stdout
    assert query(db, "select requests, prompt_tokens, cache_read_tokens, output_tokens, cost_usd, no_cache_cost_usd "
                     "from marts.daily_savings") == row


def test_sql_answers_read_only_and_refuses_writes(tmp_path):
    db = tmp_path / "w.duckdb"
    assert cachemeter("run", "--db", str(db), cwd=tmp_path).returncode == 0
    done = cachemeter("sql", "select count(*) as n, sum(rows_quarantined) as q from stage.files", "--db", str(db),
                      "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": 10, "q": 4}]
    refused = cachemeter("sql", "delete from core.usage", "--db", str(db), cwd=tmp_path)
    assert refused.returncode == 1 and "read-only" in refused.stderr.lower()
    for statement in (f"attach '{tmp_path / 'other.duckdb'}' as other", f"copy (select 1) to '{tmp_path / 'out.csv'}'",
                      "set enable_external_access = true"):
        refused = cachemeter("sql", statement, "--db", str(db), cwd=tmp_path)
        assert refused.returncode == 1, statement
    assert not (tmp_path / "other.duckdb").exists() and not (tmp_path / "out.csv").exists()
    assert query(db, "select count(*) from core.usage")[0][0] > 5000


def test_demo_logs_are_deterministic(tmp_path):
    # the bundled demo is what fixtures/make_demo_logs.py writes; regenerating must not change a byte
    generated = subprocess.run([sys.executable, str(REPO / "fixtures" / "make_demo_logs.py")], capture_output=True, text=True)
    assert generated.returncode == 0
    assert subprocess.run(["git", "diff", "--quiet", "--", "fixtures/demo_logs"], cwd=REPO).returncode == 0


def test_a_bad_price_file_is_reported_with_its_file_and_line(tmp_path):
    prices = tmp_path / "rates.csv"
    prices.write_text("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,"
                      "cache_write_1h_per_mtok,output_per_mtok\nopenai,gpt-4o,2026-01-01,abc,1,1,1,1\n")
    done = cachemeter("run", "--db", str(tmp_path / "w.duckdb"), "--prices", str(prices), cwd=tmp_path)
    assert done.returncode == 1
    assert "rates.csv:2: input_per_mtok 'abc' is not a number" in " ".join(done.stderr.split())
