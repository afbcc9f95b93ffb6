"""Replay block-hash request traces through a prefix-cache model to find each request's cache reads.

A trace record carries ``hash_ids``: one id per block of ``block_size`` prompt tokens, each id a
chained hash of its block and everything before it (the Mooncake FAST'25 format). A request reads
from the cache the leading run of its blocks that the cache holds when it arrives; its blocks are
then inserted. Replay is sequential by nature (each request changes the state the next one sees),
which is why it runs here in Python rather than as a set-based SQL statement.

Reference values (``../shared/data/mooncake_fast25/README.md``): with an infinite cache the
conversation trace reads 0.3736 of its prompt tokens from cache, the synthetic trace 0.6512.
Finite models answer what a given KV-cache size (``lru``, capacity in tokens) or retention
(``ttl``, seconds, refreshed on every read and write) would have saved on the same trace.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence


class InfiniteCache:
    """A cache that never evicts: a block is a hit once any earlier request carried it."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def lookup_then_insert(self, chain: Sequence[int], now_ms: int = 0) -> int:
        """Number of leading blocks of ``chain`` already cached; then cache all of ``chain``."""
        hits = 0
        for block in chain:
            if block not in self._seen:
                break
            hits += 1
        self._seen.update(chain)
        return hits


class TtlCache:
    """Blocks expire ``ttl_seconds`` after they were last written or read (providers refresh on hit)."""

    def __init__(self, ttl_seconds: float) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"cache_ttl_seconds must be positive, got {ttl_seconds}")
        self._ttl_ms = ttl_seconds * 1000
        self._last_used: dict[int, int] = {}

    def lookup_then_insert(self, chain: Sequence[int], now_ms: int = 0) -> int:
        hits = 0
        for block in chain:
            used = self._last_used.get(block)
            if used is None or now_ms - used > self._ttl_ms:
                break
            hits += 1
        for block in chain:
            self._last_used[block] = now_ms
        return hits


class LruCache:
    """A cache of ``capacity_tokens`` (whole blocks) that evicts the least recently used block."""

    def __init__(self, capacity_tokens: int, block_size: int) -> None:
        if capacity_tokens < block_size:
            raise ValueError(f"cache_capacity_tokens must hold at least one {block_size}-token block")
        self._capacity = capacity_tokens // block_size
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def lookup_then_insert(self, chain: Sequence[int], now_ms: int = 0) -> int:
        hits = 0
        for block in chain:
            if block not in self._blocks:
                break
            hits += 1
        for block in chain:
            self._blocks[block] = None
            self._blocks.move_to_end(block)
        while len(self._blocks) > self._capacity:
            self._blocks.popitem(last=False)
        return hits


def make_cache(model: str, block_size: int, ttl_seconds: float | None = None, capacity_tokens: int | None = None):
    """The cache model named in ``source.yaml`` (``cache: infinite | ttl | lru``); raises ``ValueError`` if incomplete."""
    if model == "infinite":
        return InfiniteCache()
    if model == "ttl":
        if ttl_seconds is None:
            raise ValueError("cache: ttl needs cache_ttl_seconds")
        return TtlCache(ttl_seconds)
    if model == "lru":
        if capacity_tokens is None:
            raise ValueError("cache: lru needs cache_capacity_tokens")
        return LruCache(capacity_tokens, block_size)
    raise ValueError(f"unknown cache model {model!r}; use infinite, ttl or lru")


def replay(chains: Iterable[Sequence[int]], prompt_tokens: Iterable[int], block_size: int,
           cache=None, arrivals_ms: Iterable[int] | None = None) -> list[int]:
    """Cache read tokens per request, in the given (arrival) order.

    ``chains[i]`` is request i's block-hash chain, ``prompt_tokens[i]`` its prompt length in tokens
    and ``arrivals_ms[i]`` its arrival time in milliseconds (needed by the TTL model). The last
    block may be partial, so reads are ``min(hit_blocks * block_size, prompt)``. Raises
    ``ValueError`` for a non-positive ``block_size``.
    """
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    cache = cache or InfiniteCache()
    prompts = list(prompt_tokens)
    times = list(arrivals_ms) if arrivals_ms is not None else [0] * len(prompts)
    return [min(cache.lookup_then_insert(chain, now) * block_size, prompt)
            for chain, prompt, now in zip(chains, prompts, times)]
