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
from collections.abc import Hashable, Mapping, Sequence
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


class CardAssigner:
    """Cards of requests fed in arrival order, chunk by chunk, under one policy (see the module docstring).

    ``family_counts``: requests per family over the whole replay (only ``prefix_hash_split_hot`` needs
    them, to find the hot family before the first request). Raises ``ValueError`` for an unknown policy
    or fewer than one card.
    """

    def __init__(self, cards: int, policy: str, family_counts: Mapping[str, int]):
        if cards < 1:
            raise ValueError(f"--cards must be at least 1, got {cards}")
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; use {', '.join(POLICIES)} or all")
        self.cards, self.policy = cards, policy
        self.homes: dict[str, int] = {}
        self.hot: str | None = None
        self.fed = self.hot_seen = 0
        if policy == "prefix_hash_split_hot" and family_counts and cards > 1:
            load: Counter = Counter()
            for family, count in family_counts.items():
                load[self._home(family)] += count
            busiest = min(load, key=lambda c: (-load[c], c))
            on_busiest = {f: n for f, n in family_counts.items() if self.homes[f] == busiest}
            self.hot = min(on_busiest, key=lambda family: (-on_busiest[family], family))
            self.other = min((c for c in range(cards) if c != self.homes[self.hot]), key=lambda c: (load[c], c))

    def _home(self, family: str) -> int:
        if family not in self.homes:
            self.homes[family] = card_of(family, self.cards)
        return self.homes[family]

    def assign(self, requests: Sequence[Request]) -> list[int]:
        """The card of each of ``requests``, the next ones in arrival order."""
        if self.policy == "round_robin":
            out = [(self.fed + i) % self.cards for i in range(len(requests))]
        else:
            out = [self._home(request.family) for request in requests]
            if self.hot is not None:
                for i, request in enumerate(requests):
                    if request.family == self.hot:
                        out[i] = self.other if self.hot_seen % 2 else out[i]
                        self.hot_seen += 1
        self.fed += len(requests)
        return out


def assign_cards(requests: Sequence[Request], cards: int, policy: str) -> list[int]:
    """The card of each request (in the given arrival order) under ``policy``; raises ``ValueError``
    for an unknown policy or fewer than one card."""
    return CardAssigner(cards, policy, Counter(r.family for r in requests)).assign(requests)


class Replayer:
    """The caches of ``cards`` cards replaying requests fed in arrival order, chunk by chunk (``feed``),
    so a day's requests need not be held at once; ``result`` gives what a replay of all of them gives.

    ``capacity_tokens``: each card's LRU cache size in tokens (None = infinite); raises ``ValueError``
    for a non-positive capacity.
    """

    def __init__(self, cards: int, capacity_tokens: int | None = None):
        if capacity_tokens is not None and capacity_tokens <= 0:
            raise ValueError(f"cache capacity must be positive tokens, got {capacity_tokens}")
        self.capacity_tokens = capacity_tokens
        self.caches: list[OrderedDict] = [OrderedDict() for _ in range(cards)]
        self.used = [0] * cards
        self.card_requests = [0] * cards
        self.card_prefill = [0] * cards
        self.family_blocks: dict[Hashable, str] = {}
        self.copies: Counter = Counter()
        self.copies_max = self.reads = self.prompts = self.evicted = self.requests = 0

    def feed(self, requests: Sequence[Request], assignment: Sequence[int]) -> None:
        """Replay ``requests``, each on its card of ``assignment``, after those fed before."""
        caches, used, card_requests, card_prefill = self.caches, self.used, self.card_requests, self.card_prefill
        family_blocks, copies, capacity_tokens = self.family_blocks, self.copies, self.capacity_tokens
        copies_max, reads, prompts, evicted = self.copies_max, self.reads, self.prompts, self.evicted
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
        self.copies_max, self.reads, self.prompts, self.evicted = copies_max, reads, prompts, evicted
        self.requests += len(requests)

    def result(self) -> RoutingResult:
        """What the requests fed so far give."""
        prefill = self.prompts - self.reads
        return RoutingResult(
            token_hit_rate=self.reads / self.prompts if self.prompts else 0.0,
            prefill_tokens=prefill,
            busiest_card_request_share=max(self.card_requests) / self.requests if self.requests else 0.0,
            busiest_card_prefill_share=max(self.card_prefill) / prefill if prefill else 0.0,
            resident_copies_max=self.copies_max,
            evicted_tokens=self.evicted,
        )


def replay(requests: Sequence[Request], cards: int, policy: str,
           capacity_tokens: int | None = None) -> RoutingResult:
    """Replay ``requests`` (in arrival order) over ``cards`` cards under ``policy``.

    ``capacity_tokens``: each card's LRU cache size in tokens (None = infinite). Raises
    ``ValueError`` for an unknown policy, fewer than one card or a non-positive capacity.
    """
    replayer = Replayer(cards, capacity_tokens)
    replayer.feed(requests, assign_cards(requests, cards, policy))
    return replayer.result()
