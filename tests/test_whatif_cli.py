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
