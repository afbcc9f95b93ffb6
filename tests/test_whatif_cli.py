"""``cachemeter whatif`` as a user runs it (issue 22, items 1 and 4): exact JSON keys, one-line errors."""

import json
import shutil

from pipelines.lib.whatif import routing
from tests.conftest import REPO
from tests.test_cli import cachemeter

KEYS = ["token_hit_rate", "prefill_tokens", "busiest_card_request_share", "busiest_card_prefill_share",
        "resident_copies_max", "evicted_tokens"]  # the issue's JSON keys, exactly


def test_routing_on_the_mooncake_trace_prints_the_issues_keys_for_every_policy(tmp_path, shared):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(shared / "data" / "mooncake_fast25" / "conversation_trace.jsonl", logs)
    done = cachemeter("whatif", "routing", "--logs", str(logs), "--cards", "4", "--policy", "all",
                      "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == list(routing.POLICIES)
    assert all(list(values) == KEYS for values in result.values())
    assert round(result["prefix_hash"]["token_hit_rate"], 3) == 0.374  # hashing keeps the single cache's hits
    assert result["round_robin"]["resident_copies_max"] == 4 and result["prefix_hash"]["resident_copies_max"] == 1
    one = cachemeter("whatif", "routing", "--logs", str(logs), "--cards", "1", "--policy", "round_robin",
                     "--cache-gb", "8", "--model-config", "llama-3.1-70b", "--format", "json", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    bounded = json.loads(one.stdout)
    assert list(bounded) == KEYS and bounded["evicted_tokens"] > 0
    assert bounded["token_hit_rate"] < 0.3736  # an 8 GB card (24,414 tokens of a 70B model's KV) evicts


def test_routing_on_usage_logs_uses_prefix_families(tmp_path):
    done = cachemeter("whatif", "routing", "--logs", str(REPO / "fixtures" / "demo_logs"), "--cards", "4",
                      "--policy", "prefix_hash", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == KEYS and 0.5 < result["token_hit_rate"] < 1 and result["resident_copies_max"] == 1


def test_kv_answers_the_issues_example_and_errors_are_one_line(tmp_path):
    done = cachemeter("whatif", "kv", "--model-config", "llama-3.1-70b", "--tokens", "1200", "--cache-gb", "8",
                      "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["bytes_per_token"], result["bytes_per_copy"], result["copies_fit"]) == (327_680, 393_216_000, 20)
    user_file = tmp_path / "config.json"
    user_file.write_text('{"num_hidden_layers": 0}')
    for args in (["kv", "--model-config", str(user_file), "--tokens", "1", "--cache-gb", "1"],
                 ["routing", "--cards", "2"],
                 ["routing", "--logs", str(tmp_path / "missing"), "--cards", "2"]):
        bad = cachemeter("whatif", *args, cwd=tmp_path)
        assert bad.returncode == 1 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr, bad.stderr


def test_ttft_estimate_is_two_flops_per_parameter_per_cached_token_over_the_cards_throughput(tmp_path):
    # the seed's arithmetic: 70e9 parameters x 2 x 1,200 cached tokens / 10^15 FLOP/s = 0.168 s
    from pipelines.lib.whatif import prefill
    assert prefill.prefill_seconds(70_000_000_000, 1_200, peak_tflops=1_000, utilization=1.0) == 0.168
    config = tmp_path / "seventy.json"
    config.write_text(json.dumps({"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                                  "hidden_size": 8192, "num_parameters": 70_000_000_000}))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "usage.csv").write_text(
        "request_id,ts,provider,model,app,uncached_input_tokens,cache_read_tokens,output_tokens,ttft_ms\n"
        "a,2026-11-20T09:00:00Z,self_hosted,llama-70b,chat,80,1200,10,\n"   # a hit without a logged TTFT
        "b,2026-11-20T09:01:00Z,self_hosted,llama-70b,chat,80,1200,10,\n"
        "c,2026-11-20T09:02:00Z,self_hosted,llama-70b,chat,1280,0,10,\n"    # a miss: nothing saved
        "d,2026-11-20T09:03:00Z,self_hosted,llama-70b,chat,80,1200,10,150\n"  # measured: not estimated
        "e,2026-11-20T09:04:00Z,self_hosted,llama-70b,chat,1280,0,10,450\n", encoding="utf-8")
    db = tmp_path / "w.duckdb"
    assert cachemeter("run", "--logs", str(logs), "--db", str(db), cwd=tmp_path).returncode == 0
    done = cachemeter("whatif", "ttft", "--db", str(db), "--model-config", str(config), "--card-tflops", "1000",
                      "--utilization", "1", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["num_parameters"], result["flop_per_second"]) == (70_000_000_000, 1e15)
    [family] = result["families"]
    assert (family["requests"], family["unmeasured_requests"], family["unmeasured_hit_requests"],
            family["unmeasured_cache_read_tokens"], family["measured_requests"]) == (5, 3, 2, 2_400, 2)
    assert family["prefill_seconds_saved"] == 2 * 0.168 and family["prefill_seconds_saved_per_hit"] == 0.168
    assert family["measured_median_ttft_saved_ms"] == 300.0  # the miss's 450 ms - the hit's 150 ms
    table = cachemeter("whatif", "ttft", "--db", str(db), "--model-config", str(config), "--card-tflops", "1000",
                       "--utilization", "1", cwd=tmp_path)
    assert table.returncode == 0 and "0.1680" in table.stdout and "300.0" in table.stdout
    bad = cachemeter("whatif", "ttft", "--db", str(db), "--model-config", "llama-3.1-70b", "--card-tflops", "0", cwd=tmp_path)
    assert bad.returncode == 1 and "card throughput must be a positive" in bad.stderr and "Traceback" not in bad.stderr


def test_sizes_and_throughputs_that_are_not_finite_numbers_are_refused_in_one_line(tmp_path):
    # nan compares false with every bound and inf passes `> 0`: an OverflowError traceback, or NaN in the JSON
    for args, message in ((["kv", "--model-config", "llama-3.1-8b", "--tokens", "100", "--cache-gb", "inf"], "--cache-gb"),
                          (["kv", "--model-config", "llama-3.1-8b", "--tokens", "100", "--cache-gb", "nan"], "--cache-gb"),
                          # finite in GB, not in bytes: "OverflowError: cannot convert float infinity" (a break test)
                          (["kv", "--model-config", "llama-3.1-8b", "--tokens", "100", "--cache-gb", "1e308"], "--cache-gb"),
                          (["kv", "--model-config", "llama-3.1-70b", "--tokens", "100", "--cache-gb", "8",
                            "--card-tflops", "nan"], "card throughput"),
                          (["routing", "--logs", str(tmp_path), "--cards", "2", "--cache-gb", "inf",
                            "--model-config", "llama-3.1-8b"], "--cache-gb")):
        bad = cachemeter("whatif", *args, cwd=tmp_path)
        assert bad.returncode == 1 and bad.stderr.startswith("error:") and message in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr


def test_every_reader_of_a_warehouse_says_in_one_line_when_db_is_not_one(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "text.duckdb").write_text("not a database\n")
    for command, db, message in (
            (["whatif", "routing", "--cards", "2"], "folder", "is a folder"),
            (["whatif", "ttft", "--model-config", "llama-3.1-70b", "--card-tflops", "989"], "text.duckdb",
             "is not a DuckDB warehouse file"),
            (["report"], "text.duckdb", "is not a DuckDB warehouse file"),
            (["export", "focus", "--out", "f.csv"], "folder", "is a folder")):
        bad = cachemeter(*command, "--db", str(tmp_path / db), cwd=tmp_path)
        assert bad.returncode == 1 and bad.stderr.startswith("error:") and message in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr


def test_routing_on_usage_logs_says_which_records_it_left_out(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    good = {"ts": "2026-11-20T09:00:00Z", "provider": "openai", "model": "gpt-4o", "request_id": "r1",
            "response": {"usage": {"prompt_tokens": 2000, "completion_tokens": 10,
                                   "prompt_tokens_details": {"cached_tokens": 1024}}}}
    (logs / "usage.jsonl").write_text(json.dumps(good) + "\n{not json\n")
    done = cachemeter("whatif", "routing", "--logs", str(logs), "--cards", "2", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "quarantined usage.jsonl:2: malformed JSON" in done.stderr
    assert "1 request(s) replayed; 1 record(s) quarantined" in done.stderr
    assert list(json.loads(done.stdout)) == list(routing.POLICIES)


def test_a_reader_of_a_warehouse_its_first_run_still_writes_says_so_in_one_line(tmp_path):
    # a break test: during a warehouse's first run (no snapshot yet) `whatif routing` and `whatif ttft` ended in
    # "IOException ... Conflicting lock ... an unexpected error, please report it"; and --cards had no bound
    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()
    with warehouse.held_for_run(str(db), 0):
        for command in (["routing", "--cards", "2"], ["ttft", "--model-config", "llama-3.1-70b", "--card-tflops", "989"]):
            busy = cachemeter("whatif", *command, "--db", str(db), cwd=tmp_path)
            assert busy.returncode == 1 and busy.stderr.startswith("error:"), busy.stderr
            assert "the first run on this warehouse is still writing it" in busy.stderr and "unexpected" not in busy.stderr
    many = cachemeter("whatif", "routing", "--cards", "100000000", "--db", str(db), cwd=tmp_path)
    assert many.returncode == 2 and "less than or equal to 1000" in many.stderr


def test_routing_with_nothing_to_replay_says_so_instead_of_zero_hit_rates(tmp_path):
    # a break test: an empty folder printed "0 requests" and 0.0% hit rates with exit code 0
    (tmp_path / "empty").mkdir()
    done = cachemeter("whatif", "routing", "--logs", str(tmp_path / "empty"), "--cards", "4", cwd=tmp_path)
    assert done.returncode == 1 and f"no requests to replay in {tmp_path / 'empty'}" in done.stderr, done.stderr
