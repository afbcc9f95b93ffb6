"""The routing replay of usage rows, column-wise: what ``routing.Replayer`` gives, at NumPy speed.

A usage row is a request of one cacheable block, its family's preamble (``routing_inputs``), and the
routing mart replays it with unbounded caches. Then the replay has a closed form: a request's cache read
is ``min(cacheable, the largest cacheable of the earlier requests of its family on its card)`` (0 when
there is none: a block is resident at the longest length inserted, and nothing is evicted), and the
most cards that ever held one family's preamble is the count at the end (copies only grow). Both are a
running maximum per (card, family) in arrival order, computed over arrays chunk by chunk with the
maxima carried between chunks. Measured on a 5M-request day (``bench/README.md``): the per-request
Python loop took 46.1 s for the mart's six replays, this 4.1 s (2.65 s since its keys sort as 16-bit integers and
spans are ranked once a batch), with the same rows. ``routing.Replayer`` stays the
reference (LRU caches, multi-block traces) and the tests hold the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.lib.whatif import routing


class ColumnReplay:
    """One policy over ``cards`` cards with unbounded caches, fed usage rows as Arrow batches in arrival order.

    ``family_counts``: requests per family over the whole replay (every family the batches name, and the
    hot family of ``prefix_hash_split_hot``, as ``routing.CardAssigner``); ``families``: the same keys in
    the order their codes follow (shared by the replays of one day). Raises ``ValueError`` as
    ``routing.CardAssigner`` does.
    """

    def __init__(self, cards: int, policy: str, family_counts: Mapping[str, int], families: pa.Array):
        self.assigner = routing.CardAssigner(cards, policy, family_counts)
        keys = families.to_pylist()
        self.cards, self.policy, self.width = cards, policy, max(len(keys), 1)
        self.homes = np.array([routing.card_of(f, cards) for f in keys] if policy != "round_robin" else [],
                              dtype=np.int64)
        self.hot = keys.index(self.assigner.hot) if self.assigner.hot is not None else None
        self.resident = np.zeros(cards * self.width, dtype=np.int64)  # longest span per card x family, tokens
        self.card_requests = np.zeros(cards, dtype=np.int64)
        self.card_prefill = np.zeros(cards, dtype=np.int64)
        self.reads = self.prompts = self.requests = self.hot_seen = 0

    def feed(self, codes: np.ndarray, prompt: np.ndarray, cacheable: np.ndarray,
             spans: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Replay the next requests: family codes (positions in ``families``), prompt and cacheable tokens (int64).

        ``spans``: ``span_ranks(cacheable)``, when the caller feeds the same requests to several replays (the
        mart's six): the distinct spans are then sorted once, not once a replay."""
        n = len(codes)
        if n == 0:
            return
        if self.policy == "round_robin":
            card = (self.requests + np.arange(n, dtype=np.int64)) % self.cards
        else:
            card = self.homes[codes]
            if self.hot is not None:
                at = np.flatnonzero(codes == self.hot)
                moved = at[(self.hot_seen + np.arange(len(at))) % 2 == 1]  # its odd-numbered requests move
                card[moved] = self.assigner.other
                self.hot_seen += len(at)
        key = card * self.width + codes
        # grouped by (card, family), arrival order kept within a group; NumPy sorts 16-bit integers stably by radix
        # (linear), wider ones by merge sort: keys below 2^16 (cards x families, 8 x 8,192) take the former
        order = np.argsort(key.astype(np.uint16) if self.cards * self.width <= 1 << 16 else key, kind="stable")
        key, span, card = key[order], cacheable[order], card[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
        # a running maximum per group in one pass: each group's values lifted above the group before's; over
        # the spans' ranks (< n), not the spans (up to 10^12 tokens), so the lift cannot overflow int64
        values, rank = spans if spans is not None else span_ranks(cacheable)
        rank = rank[order]
        lift = len(values)
        running = values[np.maximum.accumulate(rank + group * lift) - group * lift]
        before = np.r_[0, running[:-1]]
        before[starts] = 0
        read = np.minimum(span, np.maximum(before, self.resident[key]))
        ends = np.r_[starts[1:], n] - 1
        self.resident[key[ends]] = np.maximum(self.resident[key[ends]], running[ends])
        prompt = prompt[order]
        self.reads += int(read.sum())
        self.prompts += int(prompt.sum())
        self.requests += n
        on = np.flatnonzero(np.r_[True, card[1:] != card[:-1]])  # sorted by key, so by card: each card's run
        self.card_requests[card[on]] += np.diff(np.r_[on, n])
        self.card_prefill[card[on]] += np.add.reduceat(prompt - read, on)

    def result(self) -> routing.RoutingResult:
        """What ``routing.Replayer.result`` gives for the requests fed so far."""
        prefill = self.prompts - self.reads
        copies = (self.resident.reshape(self.cards, -1) > 0).sum(axis=0)
        return routing.RoutingResult(
            token_hit_rate=self.reads / self.prompts if self.prompts else 0.0,
            prefill_tokens=prefill,
            busiest_card_request_share=int(self.card_requests.max()) / self.requests if self.requests else 0.0,
            busiest_card_prefill_share=int(self.card_prefill.max()) / prefill if prefill else 0.0,
            resident_copies_max=int(copies.max()) if len(copies) else 0,
            evicted_tokens=0,
        )


def span_ranks(cacheable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct spans of ``cacheable`` (ascending) and each request's position among them (int64, one a request)."""
    values, rank = np.unique(cacheable, return_inverse=True)
    return values, rank.reshape(-1)


def family_codes(batch: pa.RecordBatch | pa.Table, families: pa.Array) -> np.ndarray:
    """Each row's position of its ``prefix_family`` in ``families`` (int64); raises ``KeyError`` for one not there."""
    codes = pc.index_in(batch["prefix_family"], value_set=families, skip_nulls=False)
    if codes.null_count:
        raise KeyError("a request's prefix family is not among the day's families")
    return codes.to_numpy(zero_copy_only=False).astype(np.int64)
