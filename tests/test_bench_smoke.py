"""Smoke test of the benchmark generator and harness on a tiny input (the benchmark itself is not run in CI)."""

import json
import subprocess
import sys

from tests.conftest import REPO


def test_generator_is_deterministic_and_streams_mixed_formats(tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    first = generate.generate(300, 2, tmp_path / "a", seed=5)
    second = generate.generate(300, 2, tmp_path / "b", seed=5)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    records = [json.loads(line) for p in first for line in p.read_text().splitlines()]
    assert len(records) == 300 and {r["provider"] for r in records} == {"openai", "anthropic", "gemini", "bedrock"}


def test_harness_prints_one_measurement_line(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--requests", "300", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["requests"] == 300 and line["wall_seconds"] > 0 and line["parse_seconds"] > 0
    assert line["ratio_to_parse"] > 1  # the whole pipeline cannot beat parsing alone
    assert line["peer_rows_per_second"] > 0 and line["peak_rss_bytes"] > 0


def test_harness_measures_a_new_day_on_top_of_history(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--requests", "20", "--history-days", "1",
                           "--workdir", str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["history_days"] == 1 and line["new_day_alone_seconds"] > 0 and line["new_day_on_history_seconds"] > 0
    # the nightly run on top of history rebuilt only the new day
    import duckdb

    with duckdb.connect(str(tmp_path / "w-inc-history.duckdb"), read_only=True) as conn:
        assert conn.execute("select count(distinct day) from core.usage").fetchall() == [(2,)]
        assert conn.execute("select count(*) from stage.pending_days").fetchall() == [(0,)]
