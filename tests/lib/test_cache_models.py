"""Cache replay of block-hash traces (lib/cache_models.py)."""

import json

import pytest

from pipelines.lib import cache_models


def test_leading_blocks_seen_before_are_read_and_last_block_may_be_partial():
    chains = [[1, 2, 3], [1, 2, 4], [5], [1, 9, 3]]
    prompts = [1300, 1100, 100, 1536]
    # request 2 shares blocks 1,2 (1024 tokens); request 4 shares only block 1 (block 3 after a miss is not a prefix)
    assert cache_models.replay(chains, prompts, 512) == [0, 1024, 0, 512]
    # a hit on a partial last block never exceeds the prompt
    assert cache_models.replay([[7, 8], [7, 8]], [600, 600], 512) == [0, 600]


def test_block_size_must_be_positive():
    with pytest.raises(ValueError, match="block_size"):
        cache_models.replay([[1]], [10], 0)


@pytest.mark.parametrize("trace, read_tokens, prompt_tokens", [
    # Reference values: ../shared/data/mooncake_fast25/README.md, token-weighted infinite-cache hit ratio
    ("conversation_trace.jsonl", 54_098_411, 144_793_823),  # 0.3736
    ("synthetic_trace.jsonl", 39_852_661, 61_194_628),      # 0.6512
])
def test_mooncake_traces_match_the_published_infinite_cache_ratio(shared, trace, read_tokens, prompt_tokens):
    records = [json.loads(line) for line in (shared / "data" / "mooncake_fast25" / trace).read_text().splitlines()]
    reads = cache_models.replay([r["hash_ids"] for r in records], [r["input_length"] for r in records], 512)
    assert sum(reads) == read_tokens
    assert sum(r["input_length"] for r in records) == prompt_tokens
    assert round(sum(reads) / prompt_tokens, 4) == {"conversation_trace.jsonl": 0.3736, "synthetic_trace.jsonl": 0.6512}[trace]
