"""Replay block-hash request traces through a prefix-cache model to find each request's cache reads.

A trace record carries ``hash_ids``: one id per block of ``block_size`` prompt tokens, each id a
chained hash of its block and everything before it (the Mooncake FAST'25 format). A request reads
from the cache the leading run of its blocks that the cache holds when it arrives; its blocks are
then inserted. Replay is sequential by nature (each request changes the state the next one sees),
which is why it runs here in Python rather than as a set-based SQL statement.

Reference values (``../shared/data/mooncake_fast25/README.md``): with an infinite cache the
conversation trace reads 0.3736 of its prompt tokens from cache, the synthetic trace 0.6512.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class InfiniteCache:
    """A cache that never evicts: a block is a hit once any earlier request carried it."""

    name = "infinite"

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def lookup_then_insert(self, chain: Sequence[int]) -> int:
        """Number of leading blocks of ``chain`` already cached; then cache all of ``chain``."""
        hits = 0
        for block in chain:
            if block not in self._seen:
                break
            hits += 1
        self._seen.update(chain)
        return hits


def replay(chains: Iterable[Sequence[int]], prompt_tokens: Iterable[int], block_size: int,
           cache: InfiniteCache | None = None) -> list[int]:
    """Cache read tokens per request, in the given (arrival) order.

    ``chains[i]`` is request i's block-hash chain and ``prompt_tokens[i]`` its prompt length in
    tokens. The last block may be partial, so reads are ``min(hit_blocks * block_size, prompt)``.
    Raises ``ValueError`` for a non-positive ``block_size``.
    """
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    cache = cache or InfiniteCache()
    return [min(cache.lookup_then_insert(chain) * block_size, prompt) for chain, prompt in zip(chains, prompt_tokens)]
