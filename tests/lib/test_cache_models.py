"""Cache replay of block-hash traces (lib/cache_models.py)."""

import json

import pytest

from pipelines.ingest import cache_models


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


def test_ttl_refreshes_on_hit_and_expires_when_idle():
    cache = cache_models.TtlCache(ttl_seconds=10)
    assert cache_models.replay([[1], [1], [1], [1]], [512] * 4, 512, cache, [0, 9_000, 18_000, 40_000]) == [0, 512, 512, 0]


def test_lru_evicts_the_least_recently_used_block():
    cache = cache_models.LruCache(capacity_tokens=1024, block_size=512)  # two blocks
    assert cache_models.replay([[1], [2], [1], [3], [2]], [512] * 5, 512, cache) == [0, 0, 512, 0, 0]


@pytest.mark.parametrize("trace", ["conversation_trace.jsonl", "synthetic_trace.jsonl"])
def test_finite_caches_on_mooncake_fall_between_zero_and_infinite_as_they_shrink(shared, trace):
    records = [json.loads(line) for line in (shared / "data" / "mooncake_fast25" / trace).read_text().splitlines()]
    chains, prompts, times = [r["hash_ids"] for r in records], [r["input_length"] for r in records], [r["timestamp"] for r in records]
    total = sum(prompts)

    def rate(cache):
        return sum(cache_models.replay(chains, prompts, 512, cache, times)) / total

    infinite = rate(cache_models.InfiniteCache())
    lru = [rate(cache_models.LruCache(capacity, 512)) for capacity in (10_000_000, 3_000_000, 1_000_000, 100_000)]
    ttl = [rate(cache_models.TtlCache(seconds)) for seconds in (1800, 300, 60, 5)]
    for series in (lru, ttl):
        assert all(0 < r <= infinite for r in series)
        assert series == sorted(series, reverse=True) and series[0] > series[-1]
    # the published LRU curve (../shared/data/mooncake_fast25/README.md): 3e6 tokens -> 0.136 / 0.309 block hit ratio;
    # token-weighted rates sit within a few points of it
    assert abs(lru[1] - {"conversation_trace.jsonl": 0.136, "synthetic_trace.jsonl": 0.309}[trace]) < 0.03
