"""The routing mart's column-wise replay (lib/whatif/routing_columns.py) gives what the request-by-request
reference (routing.Replayer) gives, for every policy, across batch edges, zero-cacheable rows and the hot
family's split."""

import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from pipelines.lib.whatif import routing, routing_columns
from pipelines.lib.whatif.routing_inputs import _request


def usage_rows(seed: int, n: int, families: int) -> list[tuple[str, int, int]]:
    """(family, prompt tokens, cacheable tokens) in arrival order: a skewed family mix (one hot family),
    spans that grow and shrink (a longer preamble written later, a shorter one read), some not cacheable."""
    rng = random.Random(seed)
    names = [f"fam{i:03d}" for i in range(families)]
    rows = []
    for _ in range(n):
        family = names[0] if rng.random() < 0.4 else rng.choice(names)
        prompt = rng.randint(1, 40_000)
        cacheable = 0 if rng.random() < 0.15 else min(prompt, rng.choice([1024, 2048, 4096, rng.randint(1, 9000)]))
        rows.append((family, prompt, cacheable))
    return rows


def column_results(rows, cards: int, policy: str, batch: int) -> routing.RoutingResult:
    counts = Counter(family for family, _, _ in rows)
    families = pa.array(list(counts), pa.string())
    replay = routing_columns.ColumnReplay(cards, policy, counts, families)
    for at in range(0, len(rows), batch):
        part = pa.table({"prefix_family": [r[0] for r in rows[at:at + batch]],
                         "prompt_tokens": pa.array([r[1] for r in rows[at:at + batch]], pa.int64()),
                         "cacheable_tokens": pa.array([r[2] for r in rows[at:at + batch]], pa.int64())})
        replay.feed(routing_columns.family_codes(part, families), part["prompt_tokens"].to_numpy(),
                    part["cacheable_tokens"].to_numpy())
    return replay.result()


@pytest.mark.parametrize("policy", routing.POLICIES)
@pytest.mark.parametrize("cards", [1, 3, 4, 8])
@pytest.mark.parametrize("batch", [1, 7, 5000])
def test_the_column_wise_replay_equals_the_request_by_request_replay(policy, cards, batch):
    rows = usage_rows(seed=cards * 31 + batch, n=2000, families=25)
    expected = routing.replay([_request(*row) for row in rows], cards, policy)
    got = column_results(rows, cards, policy, batch)
    assert got == expected
    assert 0 < got.token_hit_rate < 1 and got.prefill_tokens > 0  # a replay with reads and misses, not a trivial one


def test_a_later_longer_span_is_read_only_up_to_what_was_resident():
    # card 0 of one: the first request writes 1,000 tokens, the second reads those 1,000 of its 3,000 and
    # leaves 3,000 resident, the third reads 2,500 of its 2,500; a request that caches nothing reads nothing
    rows = [("a", 5000, 1000), ("a", 5000, 3000), ("a", 5000, 0), ("a", 5000, 2500)]
    result = column_results(rows, 1, "round_robin", batch=2)
    assert result.token_hit_rate == (1000 + 2500) / 20_000
    assert result.prefill_tokens == 20_000 - 3500
    assert result == routing.replay([_request(*row) for row in rows], 1, "round_robin")


def test_spans_up_to_the_token_bound_in_many_groups_keep_their_running_maximum():
    # 12,000 families on one card, each twice, the first with 10^12 tokens (the ingest bound on a token count):
    # a running maximum lifted per group by the largest span would pass int64 (12,000 x 10^12 x ...), by the
    # spans' ranks it cannot
    rows = [(f"f{i}", 10**12, 10**12 - i) for i in range(12_000)] + [(f"f{i}", 10**12, 10**12) for i in range(12_000)]
    result = column_results(rows, 1, "round_robin", batch=len(rows))
    assert result.token_hit_rate == sum(10**12 - i for i in range(12_000)) / (24_000 * 10**12)
    assert result == routing.replay([_request(*row) for row in rows], 1, "round_robin")


def test_a_family_not_among_the_days_families_is_refused():
    with pytest.raises(KeyError, match="not among"):
        routing_columns.family_codes(pa.table({"prefix_family": ["x"]}), pa.array(["a"]))
    assert routing_columns.family_codes(pa.table({"prefix_family": ["b", "a"]}), pa.array(["a", "b"])).tolist() == [1, 0]
    assert np.issubdtype(routing_columns.family_codes(pa.table({"prefix_family": ["a"]}), pa.array(["a"])).dtype, np.int64)


@pytest.mark.parametrize("families", [8192, 8193])
def test_keys_at_and_past_sixteen_bits_sort_as_the_reference_replays(families):
    # 8 cards x 8,192 families: the largest (card, family) key is 65,535, sorted as 16-bit integers (radix); one
    # family more and the keys take the 64-bit sort; both must replay as routing.Replayer does
    rows = [(f"fam{i:03d}", 3000, 1024 * (i % 3)) for i in range(families)]  # every family once, then a skewed mix
    rows += usage_rows(seed=families, n=20_000, families=families)
    counts = Counter(family for family, _, _ in rows)
    assert len(counts) == families  # every family occurs (codes reach the widest key)
    for policy in routing.POLICIES:
        assert column_results(rows, 8, policy, batch=10_000) == routing.replay([_request(*r) for r in rows], 8, policy)


def test_spans_ranked_once_for_several_replays_give_what_each_replay_ranks_itself():
    rows = usage_rows(seed=3, n=3000, families=40)
    counts = Counter(family for family, _, _ in rows)
    families = pa.array(list(counts), pa.string())
    part = pa.table({"prefix_family": [r[0] for r in rows], "prompt_tokens": pa.array([r[1] for r in rows], pa.int64()),
                     "cacheable_tokens": pa.array([r[2] for r in rows], pa.int64())})
    codes = routing_columns.family_codes(part, families)
    prompts, cacheable = part["prompt_tokens"].to_numpy(), part["cacheable_tokens"].to_numpy()
    values, rank = routing_columns.span_ranks(cacheable)
    assert (values[rank] == cacheable).all() and (np.diff(values) > 0).all()
    for policy in routing.POLICIES:
        shared, alone = (routing_columns.ColumnReplay(4, policy, counts, families) for _ in range(2))
        shared.feed(codes, prompts, cacheable, (values, rank))
        alone.feed(codes, prompts, cacheable)
        assert shared.result() == alone.result() == routing.replay([_request(*r) for r in rows], 4, policy)
