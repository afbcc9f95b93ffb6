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
    assert line["cpu_seconds"] > line["parse_cpu_seconds"] > 0 and line["cpu_ratio_to_parse"] > 1
    assert "runs" not in line  # one run: no per-run lists


def test_harness_repeats_alternate_parse_and_run_and_report_medians(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "bench"))
    import run

    order, walls, parses = [], iter([9.0, 3.0, 4.0]), iter([1.0, 2.0, 1.5])
    monkeypatch.setattr(run, "bare_parse_seconds", lambda logs: order.append("parse") or next(parses))
    monkeypatch.setattr(run, "pipeline_seconds", lambda logs, db: order.append("run") or (next(walls), 7))
    peers = iter([10.0, 30.0, 8.0])
    monkeypatch.setattr(run, "peer_rows_per_second", lambda logs: order.append("peer") or next(peers))
    monkeypatch.setattr(sys, "argv", ["run.py", "--requests", "40", "--workdir", str(tmp_path), "--repeat", "3"])
    printed = []
    monkeypatch.setattr("builtins.print", printed.append)
    run.main()
    line = json.loads(printed[-1])
    assert order == ["parse", "run", "peer"] * 3
    assert (line["wall_seconds"], line["parse_seconds"], line["ratio_to_parse"]) == (4.0, 1.5, 2.67)
    assert line["wall_seconds_each"] == [9.0, 3.0, 4.0] and line["runs"] == 3
    assert line["rows_per_second"] == 10 and line["peer_rows_per_second"] == 10 and line["speedup_vs_peer"] == 1.0
    assert line["peer_rows_per_second_each"] == [10, 30, 8]


def test_harness_measures_a_new_day_on_top_of_history(tmp_path, monkeypatch):
    # the harness's orchestration, with the pipeline runs recorded instead of run (each would cost a
    # pipeline start; the run itself, and that a nightly run rebuilds only pending days, are tested elsewhere)
    sys.path.insert(0, str(REPO / "bench"))
    import run

    calls = []

    def fake_pipeline_seconds(logs, db, *extra):
        calls.append((sorted(p.name for p in logs.iterdir()), db.name, extra))
        if db.name == "w-inc-history.duckdb":  # every round on top starts from the loaded history, not the last round's
            assert db.read_text() == "warehouse after call 2"
            # with what the last night left beside it: its snapshot and that snapshot's spare
            assert (tmp_path / "w-inc-history.snapshot.duckdb").read_text() == "snapshot after call 2"
            assert (tmp_path / "w-inc-history.snapshot.duckdb.spare").read_text() == "snapshot after call 1"
        snapshot = db.with_name(db.name.replace(".duckdb", ".snapshot.duckdb"))
        if snapshot.exists():
            snapshot.replace(snapshot.with_name(snapshot.name + ".spare"))
        db.write_text(f"warehouse after call {len(calls)}")
        snapshot.write_text(f"snapshot after call {len(calls)}")
        return {0: 9.0, 1: 9.0, 2: 2.0, 3: 2.5, 4: 3.0, 5: 4.5, 6: 1.0, 7: 2.0}[len(calls) - 1], 1000
    monkeypatch.setattr(run, "pipeline_seconds", fake_pipeline_seconds)
    line = run.incremental(20, 2, tmp_path, repeat=3)
    first, second, third = "usage-2026-10-01.jsonl", "usage-2026-10-02.jsonl", "usage-2026-10-03.jsonl"
    # history loaded (untimed) as all days but the last in one run, then the last as a night's run
    history = [([first], "w-inc-loaded.duckdb", ("--follow-symlinks",)),
               ([first, second], "w-inc-loaded.duckdb", ("--follow-symlinks",))]
    alone = ([third], "w-inc-alone.duckdb", ("--follow-symlinks",))                           # the new day alone
    on_top = ([first, second, third], "w-inc-history.duckdb", ("--follow-symlinks",))         # the new day on top
    assert calls == [*history, alone, on_top, alone, on_top, alone, on_top]
    assert line == {"requests_per_day": 20, "history_days": 2, "new_day_alone_seconds": 2.0,
                    "new_day_on_history_seconds": 2.5, "ratio_to_alone": 1.25, "peak_rss_bytes": 1000, "runs": 3,
                    "alone_seconds_each": [2.0, 3.0, 1.0], "on_history_seconds_each": [2.5, 4.5, 2.0]}
    assert len((tmp_path / "logs-20x3" / third).read_text().splitlines()) == 20  # requests per day


def test_floor_mode_measures_the_lane_one_write_and_a_one_line_run(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--requests", "300", "--workdir", str(tmp_path),
                           "--floor"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["requests"] == 300 and line["parse_seconds"] > 0
    assert min(line["lane_seconds"], line["write_seconds"], line["fixed_seconds"]) > 0
    assert abs(line["floor_seconds"] - (line["lane_seconds"] + line["write_seconds"] + line["fixed_seconds"])) <= 0.002
    assert line["floor_ratio_to_parse"] > 1  # the floor holds a whole (one-line) run
    (one_line,) = (tmp_path / "floor-one-line").iterdir()
    assert len(one_line.read_text().splitlines()) == 1


def test_body_generator_is_deterministic_and_logs_realistic_requests(tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    import generate
    from pipelines.ingest import fingerprints

    first = generate.generate(120, 2, tmp_path / "a", seed=5, bodies=True)
    second = generate.generate(120, 2, tmp_path / "b", seed=5, bodies=True)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    records = [json.loads(line) for p in first for line in p.read_text().splitlines()]
    assert len(records) == 120 and {r["provider"] for r in records} == {"openai", "anthropic", "gemini", "bedrock"}
    assert all(r["gateway"]["status"] == 200 and len(r["trace"]["trace_id"]) == 32 for r in records)
    rendered = [fingerprints.render(r["request"]) for r in records]
    assert all(2048 <= len(system) <= 30720 + 40 for system, _, _ in rendered)  # 2-30 KB (+ a rotating stamp)
    assert any(tools for _, tools, _ in rendered) and not all(tools for _, tools, _ in rendered)
    assert max(len(r["request"].get("messages") or r["request"].get("contents") or r["request"].get("input"))
               for r in records) >= 5  # multi-turn histories
    # the usage follows the bodies: prompt tokens about the rendered characters / 4
    for record, (_, _, text) in zip(records[:20], rendered[:20]):
        usage = record["response"].get("usage") or record["response"]["usageMetadata"]
        prompt = usage.get("prompt_tokens", usage.get("input_tokens", usage.get("promptTokenCount", usage.get("inputTokens"))))
        if record["provider"] in ("anthropic", "bedrock"):
            prompt += sum(v for k, v in usage.items() if k.startswith("cache") and isinstance(v, int))
        assert abs(prompt - len(text) / 4) <= len(text) / 20
    # rotating preambles: on the second (middle) day some family writes the request time into its system prompt
    stamped = {r["app"] for r, (system, _, _) in zip(records, rendered) if "Current time: 2026-10-02T" in system}
    assert stamped and not any("Current time: 2026-10-01T" in system for system, _, _ in rendered)
    # openings shared at different depths: families of different apps share their first 256 but not all 4,096 chars
    by_app = {r["app"]: fingerprints.from_rendered(*parts) for r, parts in zip(records, rendered)}
    depths = {min(len(a.opening_hashes), len(b.opening_hashes),
                  next((i for i, (x, y) in enumerate(zip(a.opening_hashes, b.opening_hashes)) if x != y), 99))
              for name_a, a in by_app.items() for name_b, b in by_app.items() if name_a < name_b}
    assert len(depths - {0}) >= 3


def test_harness_measures_the_body_path(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--requests", "40", "--bodies",
                           "--workdir", str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["requests"] == 40 and line["bodies"] is True and line["bytes"] > 40 * 4000
    assert line["ratio_to_parse"] > 1 and line["rows_per_second"] > 0 and line["peak_rss_bytes"] > 0
    (logs,) = [p for p in tmp_path.iterdir() if p.name.startswith("logs-bodies-")]
    assert all('"request":' in line for p in logs.iterdir() for line in p.read_text().splitlines())


def test_staging_against_another_checkout_alternates_and_reports_ratios(tmp_path):
    """bench/stage_against.py on this checkout against itself: both stage the same rows, two rounds each."""
    done = subprocess.run([sys.executable, str(REPO / "bench" / "stage_against.py"), "--against", str(REPO),
                           "--requests", "300", "--rounds", "2", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(result["wall_s"]["this"]) == len(result["cpu_s"]["other"]) == 2
    assert result["cpu_ratio"] > 0 and result["median_cpu_s"]["this"] > 0


def test_body_piece_times_the_per_body_work_against_another_checkout(tmp_path):
    """bench/body_piece.py on this checkout against itself, on a few generated bodies: equal rows, two rounds."""
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(60, 1, tmp_path / "logs", seed=3, bodies=True)
    for extra in ([], ["--cut"]):
        done = subprocess.run([sys.executable, str(REPO / "bench" / "body_piece.py"), "--logs", str(tmp_path / "logs"),
                               "--against", str(REPO), "--lines", "60", "--rounds", "2", *extra],
                              capture_output=True, text=True, timeout=300, cwd=REPO)
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["rows_equal"] is True and len(result["this_each"]) == len(result["against_each"]) == 2
        assert result["this_us_per_line"] > 0 and result["mode"] == ("cut" if extra else "lane")


def bench_day_warehouse(tmp_path):
    """``cachemeter run`` of a generated day of 300 requests (``tmp_path/logs-300-1``) into ``tmp_path/w.duckdb``."""
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(300, 1, tmp_path / "logs-300-1")
    ran = subprocess.run([sys.executable, "-m", "pipelines.cli", "run", "--logs", str(tmp_path / "logs-300-1"),
                          "--db", str(tmp_path / "w.duckdb")], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]


def test_problem_floor_prices_the_logs_exactly_as_a_run_does(tmp_path):
    # the floor of the problem (bench/problem_floor.py) is a floor only if it does the run's pricing work: its row
    # count and its list cost, no-cache cost and savings totals must equal those of core.usage_costs to the last digit
    bench_day_warehouse(tmp_path)
    done = subprocess.run([sys.executable, str(REPO / "bench" / "problem_floor.py"), "--requests", "300", "--workdir",
                           str(tmp_path), "--compare", str(tmp_path / "w.duckdb")],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["rows"] == line["priced_rows"] == 300 and line["agrees"] is True
    assert line["floor_seconds"] > 0 and line["parse_seconds"] > 0


def test_one_write_writes_the_usage_and_cost_rows_as_one_table_of_the_same_rows(tmp_path):
    # bench/one_write.py rewrites the pricing statement's select to carry the usage columns: the one table must hold
    # the pair's rows, column for column, or its time says nothing of one write
    bench_day_warehouse(tmp_path)
    done = subprocess.run([sys.executable, str(REPO / "bench" / "one_write.py"), str(tmp_path / "w.duckdb"),
                           "--repeat", "1"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["same_rows"] is True and set(line["seconds"]) == {"usage", "costs", "one"}


def test_problem_floor_disagrees_with_a_warehouse_of_other_logs(tmp_path):
    # the comparison can fail: a warehouse of other requests (another seed) has other totals
    sys.path.insert(0, str(REPO / "bench"))
    import generate
    import problem_floor

    generate.generate(40, 1, tmp_path / "mine")
    other = tmp_path / "other.duckdb"
    import duckdb
    with duckdb.connect(str(other)) as conn:
        conn.execute("create schema core")
        conn.execute("create table core.usage_costs (list_cost_usd decimal(38, 15), no_cache_cost_usd decimal(38, 15), "
                     "savings_usd decimal(38, 15))")
    result = problem_floor.floor_once(tmp_path / "mine", tmp_path / "floor.duckdb",
                                      problem_floor.rates(generate.FIRST_DAY.date()))
    assert result["totals"][0] == 40 and result["totals"][1] == 40
    assert problem_floor.compare(result["totals"], other) is False


def test_statement_times_files_each_statement_under_its_sql_file(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = (REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()
    (logs / "one.jsonl").write_text(lines[0] + "\n")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "statement_times.py"), "--logs", str(logs),
                           "--db", str(tmp_path / "w.duckdb")], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    calls = {name: count for name, count, _ in line["statements"]}
    # one file of one record: the lane reads it once, the day is priced once and its savings rolled up once
    assert calls["ingest/fast_items__read_jsonl"] == 1
    assert calls["ingest/usage__insert_batch"] == 1
    assert calls["costs/usage_costs__insert_window"] == 1
    assert calls["marts/daily_savings__insert_window"] == 1
    assert all(seconds >= 0 for _, _, seconds in line["statements"])
    assert 0 < line["statement_seconds"] < line["wall_seconds"]
    assert "statement" in done.stderr and "ingest/fast_items__read_jsonl" in done.stderr  # the table


def test_append_day_times_the_run_after_a_day_is_appended_to_a_file_of_many(tmp_path):
    """bench/append_day.py on this checkout against itself, three generated days: both sides measured, one line."""
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(300, 3, tmp_path / "days", seed=5)
    done = subprocess.run([sys.executable, str(REPO / "bench" / "append_day.py"), "--days-dir", str(tmp_path / "days"),
                           "--workdir", str(tmp_path / "work"), "--against", str(REPO)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["days"] == 3 and result["ratio_wall"] > 0
    assert all(wall > 0 and cpu > 0 for side in ("this", "against")
               for wall, cpu in (result[side][run] for run in ("first_run", "after_append", "day_alone")))
    assert result["this"]["append_to_alone"] > 0  # the appended night against the last day alone
    # the appended day is in the file, once: its run staged every line of the three days
    from tests.conftest import query
    assert query(tmp_path / "work" / "this" / "w.duckdb", "select count(*) from core.usage") == [(300,)]
