"""KV memory and prefill what-if (issue 22, items 4 and 3's estimate): the issue's arithmetic exactly."""

import json

import pytest

from pipelines.lib.whatif import kv_memory, prefill


def seventy_b(tmp_path):
    # the issue's 70B-class model: 80 layers, 8 KV heads, 128 dims, 2 bytes per value
    path = tmp_path / "seventy-b.json"
    path.write_text(json.dumps({"num_hidden_layers": 80, "num_key_value_heads": 8, "num_attention_heads": 64,
                                "hidden_size": 8192, "torch_dtype": "bfloat16"}))
    return kv_memory.load_model_config(path)


def test_the_issues_kv_arithmetic_exactly(tmp_path):
    model = seventy_b(tmp_path)
    assert model.kv_bytes_per_token == 80 * 8 * 128 * 2 * 2 == 327_680  # 320 KiB per token
    summary = kv_memory.kv_summary(model, tokens=1_200, cache_gb=8)
    assert summary["bytes_per_copy"] == 393_216_000  # a 1,200-token preamble, about 384 MB a copy
    assert summary["copies_fit"] == 20  # an 8 GB prefix cache holds 20 families
    assert summary["seats"] == 20  # no max context in this config: seats at the preamble's length
    assert kv_memory.kv_summary(model, 1_200, 8, context_tokens=8_192)["seats"] == 8_000_000_000 // (327_680 * 8_192)
    assert kv_memory.capacity_tokens(model, 8) == 8_000_000_000 // 327_680


def test_shipped_configs_load_and_the_70b_one_agrees(tmp_path):
    assert {"llama-3.1-70b", "llama-3.1-8b", "qwen2.5-72b", "mistral-7b"} <= set(kv_memory.shipped_models())
    shipped = kv_memory.load_model_config("llama-3.1-70b")
    assert shipped.kv_bytes_per_token == seventy_b(tmp_path).kv_bytes_per_token
    assert kv_memory.load_model_config("llama-3.1-8b").kv_bytes_per_token == 32 * 8 * 128 * 2 * 2
    assert all(kv_memory.load_model_config(name).num_parameters for name in kv_memory.shipped_models())


def test_fp8_kv_and_multi_head_defaults(tmp_path):
    path = tmp_path / "mha.json"
    path.write_text(json.dumps({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256,
                                "kv_cache_bytes_per_value": 1}))
    # no num_key_value_heads: every attention head keeps K and V; head dim = 256 / 4
    assert kv_memory.load_model_config(path).kv_bytes_per_token == 2 * 4 * 64 * 2 * 1


@pytest.mark.parametrize("content, message", [
    ("not json", "not a readable JSON"),
    ('{"num_hidden_layers": 0}', "num_hidden_layers must be a positive integer"),
    ('{"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 256}', "not a multiple"),
    # grouped-query attention: each KV head serves a whole group of query heads (transformers' num_key_value_groups)
    ('{"num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 5, "head_dim": 128}',
     "num_attention_heads 32 is not a multiple of num_key_value_heads 5"),
    ('{"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 16, "head_dim": 128}',
     "num_attention_heads 8 is not a multiple of num_key_value_heads 16"),
    # a head count given is a positive integer, whether or not head_dim makes it unneeded
    ('{"num_hidden_layers": 2, "num_attention_heads": "30", "num_key_value_heads": 6, "head_dim": 128}',
     "num_attention_heads must be a positive integer, got '30'"),
    ('{"num_hidden_layers": 2, "num_attention_heads": 0, "head_dim": 128}', "num_attention_heads must be a positive"),
    ('{"num_hidden_layers": 2, "head_dim": 128}', r"num_key_value_heads \(or num_attention_heads\) must be"),
    ('{"text_config": null}', "text_config is not a JSON object"),
    ('{"num_hidden_layers": 2, "num_key_value_heads": 8, "head_dim": 128, "num_parameters": 1' + "0" * 400 + "}",
     r"num_parameters \(401 digits\) is beyond any model"),  # an OverflowError reached the last-resort line
    ('{"num_hidden_layers": 2, "head_dim": 64, "num_key_value_heads": 2, "torch_dtype": "int3"}', "unknown torch_dtype"),
    ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),  # json.loads's RecursionError: an unexpected error
])
def test_bad_model_configs_name_the_file_and_field(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(kv_memory.ModelConfigError, match=message):
        kv_memory.load_model_config(path)
    with pytest.raises(kv_memory.ModelConfigError, match="not a shipped one"):
        kv_memory.load_model_config(tmp_path / "missing.json")


def test_prefill_costs_two_flops_per_parameter_per_token():
    # the issue: prefill costs about 2 FLOPs per parameter per prompt token
    assert prefill.prefill_flops(70 * 10**9, 1_200) == 2 * 70 * 10**9 * 1_200
    # 168e12 FLOPs on a 1,000 TFLOP/s card at half its peak: 0.336 s
    assert prefill.prefill_seconds(70 * 10**9, 1_200, 1_000, 0.5) == pytest.approx(0.336)
    with pytest.raises(ValueError):
        prefill.prefill_seconds(1, 1, 0)
