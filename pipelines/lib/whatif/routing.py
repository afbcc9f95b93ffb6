"""Routing what-if: replay requests over n cards, each with its own prefix cache, under a routing policy.

Requests are replayed in arrival order. A request lands on a card by the policy:

* ``round_robin``: request i (0-based, in arrival order) goes to card ``i mod n`` (cache-blind);
* ``prefix_hash``: its family goes to card ``card_of(family, n)`` (the first 8 bytes of the SHA-256
  of the family key, big-endian, mod n), so a family always meets its own cache;
* ``prefix_hash_split_hot``: as ``prefix_hash``, except that the hot family (the family with the
  most requests on the busiest card under ``prefix_hash``; ties: the lowest card, the smallest key)
  alternates between its card and the card with the fewest requests under ``prefix_hash`` (ties:
  the lowest index): its even-numbered requests (0, 2, ...) stay, the odd ones move. Half the hot
  family's load leaves its card, for one more copy of its preamble.

Its cache read is the tokens of its leading blocks resident on that card (a block resident with
fewer tokens than the request's counts that many and ends the read); then its blocks are inserted.
Each card keeps its own cache: infinite, or LRU over blocks at ``capacity_tokens`` per card
(occupancy = tokens of the resident blocks; the least recently used block goes first). Replay is
sequential by nature, hence Python (as ``cache_models``), one dict lookup per block.
"""

from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

POLICIES = ("round_robin", "prefix_hash", "prefix_hash_split_hot")
RESULT_KEYS = ("token_hit_rate", "prefill_tokens", "busiest_card_request_share", "busiest_card_prefill_share",
               "resident_copies_max", "evicted_tokens")


@dataclass(frozen=True, slots=True)
class Request:
    """One request to replay.

    ``family``: the family key text (traces: the first two block ids as ``"h0,h1"``; usage logs: the
    ``prefix_family``); ``blocks``: its chain of cacheable block ids, leading first; ``block_tokens``:
    tokens of each block (the last may be partial); ``prompt_tokens``: its whole prompt, tokens
    (>= the sum of ``block_tokens``); ``family_block``: the block whose residency on a card counts as
    a copy of the family's preamble (None: the request caches nothing).
    """

    family: str
    blocks: tuple[Hashable, ...]
    block_tokens: tuple[int, ...]
    prompt_tokens: int
    family_block: Hashable | None


@dataclass(frozen=True)
class RoutingResult:
    """What a policy gives on a trace (the keys of ``cachemeter whatif routing --format json``).

    ``token_hit_rate``: cache read tokens / prompt tokens (0..1); ``prefill_tokens``: prompt tokens
    not read from cache (tokens); ``busiest_card_request_share``: the largest share of requests one
    card receives (0..1); ``busiest_card_prefill_share``: the largest share of prefill tokens one card
    computes (0..1); ``resident_copies_max``: the most cards that held one family's preamble at the
    same time; ``evicted_tokens``: tokens of blocks evicted, summed over cards (0 when infinite).
    """

    token_hit_rate: float
    prefill_tokens: int
    busiest_card_request_share: float
    busiest_card_prefill_share: float
    resident_copies_max: int
    evicted_tokens: int

    def as_dict(self) -> dict:
        return {key: getattr(self, key) for key in RESULT_KEYS}


def card_of(family: str, cards: int) -> int:
    """The card ``prefix_hash`` sends ``family`` to: SHA-256 of the key (UTF-8), first 8 bytes, mod ``cards``."""
    return int.from_bytes(hashlib.sha256(family.encode("utf-8")).digest()[:8], "big") % cards


def assign_cards(requests: Sequence[Request], cards: int, policy: str) -> list[int]:
    """The card of each request (in the given arrival order) under ``policy``; raises ``ValueError``
    for an unknown policy or fewer than one card."""
    if cards < 1:
        raise ValueError(f"--cards must be at least 1, got {cards}")
    if policy == "round_robin":
        return [i % cards for i in range(len(requests))]
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; use {', '.join(POLICIES)} or all")
    homes: dict[str, int] = {}
    out = []
    for request in requests:
        if request.family not in homes:
            homes[request.family] = card_of(request.family, cards)
        out.append(homes[request.family])
    if policy == "prefix_hash_split_hot" and requests and cards > 1:
        load = Counter(out)
        busiest = min(load, key=lambda c: (-load[c], c))
        counts = Counter(r.family for r, card in zip(requests, out) if card == busiest)
        hot = min(counts, key=lambda family: (-counts[family], family))
        other = min((c for c in range(cards) if c != homes[hot]), key=lambda c: (load[c], c))
        seen = 0
        for i, request in enumerate(requests):
            if request.family == hot:
                out[i] = other if seen % 2 else homes[hot]
                seen += 1
    return out


def replay(requests: Sequence[Request], cards: int, policy: str,
           capacity_tokens: int | None = None) -> RoutingResult:
    """Replay ``requests`` (in arrival order) over ``cards`` cards under ``policy``.

    ``capacity_tokens``: each card's LRU cache size in tokens (None = infinite). Raises
    ``ValueError`` for an unknown policy, fewer than one card or a non-positive capacity.
    """
    if capacity_tokens is not None and capacity_tokens <= 0:
        raise ValueError(f"cache capacity must be positive tokens, got {capacity_tokens}")
    assignment = assign_cards(requests, cards, policy)
    caches: list[OrderedDict] = [OrderedDict() for _ in range(cards)]
    used = [0] * cards
    card_requests = [0] * cards
    card_prefill = [0] * cards
    family_blocks: dict[Hashable, str] = {}
    copies: Counter = Counter()
    copies_max = reads = prompts = evicted = 0
    bounded = capacity_tokens is not None
    for request, card in zip(requests, assignment):
        cache = caches[card]
        read = 0
        for block, tokens in zip(request.blocks, request.block_tokens):
            resident = cache.get(block)
            if resident is None:
                break
            read += min(tokens, resident)
            if resident < tokens:
                break
        if request.family_block is not None:
            family_blocks.setdefault(request.family_block, request.family)
        for block, tokens in zip(request.blocks, request.block_tokens):
            resident = cache.get(block)
            if resident is None:
                cache[block] = tokens
                used[card] += tokens
                family = family_blocks.get(block)
                if family is not None:
                    copies[family] += 1
                    copies_max = max(copies_max, copies[family])
            else:
                if tokens > resident:
                    cache[block] = tokens
                    used[card] += tokens - resident
                if bounded:
                    cache.move_to_end(block)
        if bounded:
            while used[card] > capacity_tokens:
                block, tokens = cache.popitem(last=False)
                used[card] -= tokens
                evicted += tokens
                family = family_blocks.get(block)
                if family is not None:
                    copies[family] -= 1
        reads += read
        prompts += request.prompt_tokens
        card_requests[card] += 1
        card_prefill[card] += request.prompt_tokens - read
    prefill = prompts - reads
    return RoutingResult(
        token_hit_rate=reads / prompts if prompts else 0.0,
        prefill_tokens=prefill,
        busiest_card_request_share=max(card_requests) / len(requests) if requests else 0.0,
        busiest_card_prefill_share=max(card_prefill) / prefill if prefill else 0.0,
        resident_copies_max=copies_max,
        evicted_tokens=evicted,
    )
