"""Routing what-if (issue 22, item 1): synthetic traces checked against the issue's arithmetic, and the
Mooncake FAST'25 conversation trace against hit rates computed here in a few lines of plain Python."""

import hashlib
import json
import shutil

import pytest

from pipelines.lib.whatif import routing
from pipelines.lib.whatif.routing_inputs import read_trace_folder, trace_request

BLOCK = 512  # tokens per hash_ids block (the Mooncake trace README)


def single_family(arrivals: int, blocks: int = 2) -> list[routing.Request]:
    """One family's arrivals, each the same ``blocks``-block preamble (block ids 1..blocks)."""
    return [trace_request(list(range(1, blocks + 1)), blocks * BLOCK) for _ in range(arrivals)]


@pytest.mark.parametrize("cards", [2, 4, 8])
def test_round_robin_meets_the_card_holding_the_family_one_time_in_n(cards):
    # The arithmetic: cache-blind round robin over n cards meets the card holding a family one
    # time in n (request i goes to card i mod n); hashing the family to one card always meets it.
    requests = single_family(cards * 25)
    home = routing.card_of(requests[0].family, cards)
    round_robin = routing.assign_cards(requests, cards, "round_robin")
    assert sum(card == home for card in round_robin) == len(requests) // cards
    assert set(routing.assign_cards(requests, cards, "prefix_hash")) == {home}
    # replayed with a cache on every card, round robin warms each card once: n cold prefills and n
    # copies of the preamble, where prefix hashing pays one of each
    rr = routing.replay(requests, cards, "round_robin")
    hashed = routing.replay(requests, cards, "prefix_hash")
    preamble = 2 * BLOCK
    assert rr.prefill_tokens == cards * preamble and rr.resident_copies_max == cards
    assert hashed.prefill_tokens == preamble and hashed.resident_copies_max == 1
    assert rr.token_hit_rate == (len(requests) - cards) / len(requests)
    assert rr.busiest_card_request_share == 1 / cards and hashed.busiest_card_request_share == 1.0


def test_splitting_the_hot_family_halves_the_busiest_cards_share():
    # The arithmetic: hashing concentrates a hot family on one card; splitting it across two
    # cards halves that card's load at the cost of one more copy of its preamble.
    requests = single_family(100)
    hashed = routing.replay(requests, 4, "prefix_hash")
    split = routing.replay(requests, 4, "prefix_hash_split_hot")
    assert hashed.busiest_card_request_share == 1.0
    assert split.busiest_card_request_share == hashed.busiest_card_request_share / 2
    assert (hashed.resident_copies_max, split.resident_copies_max) == (1, 2)
    assert split.prefill_tokens == 2 * hashed.prefill_tokens  # the second copy is prefilled once


def test_lru_cards_evict_and_count_the_evicted_tokens():
    # two families alternating on one card that holds one 2-block preamble: every arrival evicts the
    # other family, so nothing is ever read and every prefilled block but the last two is evicted
    a = trace_request([1, 2], 2 * BLOCK)
    b = trace_request([3, 4], 2 * BLOCK)
    result = routing.replay([a, b] * 5, 1, "round_robin", capacity_tokens=2 * BLOCK)
    assert result.token_hit_rate == 0 and result.prefill_tokens == 10 * 2 * BLOCK
    assert result.evicted_tokens == 9 * 2 * BLOCK  # 10 arrivals x 2 blocks inserted, 2 still resident
    assert routing.replay([a, b] * 5, 1, "round_robin", capacity_tokens=4 * BLOCK).token_hit_rate == 0.8


def test_unknown_policy_and_bad_sizes_raise():
    with pytest.raises(ValueError, match="unknown policy"):
        routing.replay(single_family(2), 2, "random")
    with pytest.raises(ValueError, match="at least 1"):
        routing.replay(single_family(2), 0, "round_robin")
    with pytest.raises(ValueError, match="positive"):
        routing.replay(single_family(2), 1, "round_robin", capacity_tokens=0)


# ---- the Mooncake FAST'25 conversation trace (../shared/data/mooncake_fast25) -----------------------

@pytest.fixture(scope="module")
def conversation(shared, tmp_path_factory):
    """(requests as the product reads them, the raw records in file order = arrival order)."""
    source = shared / "data" / "mooncake_fast25" / "conversation_trace.jsonl"
    folder = tmp_path_factory.mktemp("mooncake")
    shutil.copy(source, folder)
    records = [json.loads(line) for line in source.read_text().splitlines()]
    return read_trace_folder(folder).requests, records


def independent_hit_rate(records, cards, card_of_record) -> float:
    """Plain Python: one set of seen blocks per card; a request reads its leading seen blocks."""
    seen = [set() for _ in range(cards)]
    hit = total = 0
    for i, r in enumerate(records):
        s, k = seen[card_of_record(i, r)], 0
        while k < len(r["hash_ids"]) and r["hash_ids"][k] in s:
            k += 1
        hit, total = hit + min(k * BLOCK, r["input_length"]), total + r["input_length"]
        s.update(r["hash_ids"])
    return hit / total


def sha256_card(record, cards) -> int:
    # the documented prefix_hash mapping: SHA-256 of the family key "h0,h1", first 8 bytes big-endian, mod n
    key = ",".join(str(h) for h in record["hash_ids"][:2]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % cards


def test_one_infinite_card_reproduces_the_pipelines_hit_rate(conversation):
    requests, records = conversation
    assert len(requests) == 12_031  # the trace README's request count
    result = routing.replay(requests, 1, "round_robin")
    assert round(result.token_hit_rate, 4) == 0.3736  # the trace README's token-weighted infinite-cache ratio
    assert result.token_hit_rate == independent_hit_rate(records, 1, lambda i, r: 0)
    assert result.busiest_card_request_share == 1.0 and result.evicted_tokens == 0


@pytest.mark.parametrize("cards", [4, 16])
def test_round_robin_and_prefix_hashing_match_an_independent_replay(conversation, cards):
    requests, records = conversation
    rr = routing.replay(requests, cards, "round_robin")
    hashed = routing.replay(requests, cards, "prefix_hash")
    assert rr.token_hit_rate == independent_hit_rate(records, cards, lambda i, r: i % cards)
    assert hashed.token_hit_rate == independent_hit_rate(records, cards, lambda i, r: sha256_card(r, cards))
    # hashing keeps nearly all of the single cache's hits (only the shared first block is cold once per
    # card); round robin loses about half of them on 4 cards and more on 16
    assert hashed.token_hit_rate > 0.373 > 0.2 > rr.token_hit_rate
    assert hashed.resident_copies_max == 1 and rr.resident_copies_max == cards


def test_trace_folder_skips_bad_lines_sorts_by_time_and_leaves_other_logs(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"hash_ids": [1, 2], "input_length": 900, "timestamp": 5}\nnot json\n'
                                      '{"hash_ids": "x", "input_length": 3}\n'
                                      '{"hash_ids": [7], "input_length": 100, "timestamp": 1}\n')
    (tmp_path / "usage.jsonl").write_text('{"ts": "2026-11-20T00:00:00Z", "response": {}}\n')
    found = read_trace_folder(tmp_path)
    assert [r.family for r in found.requests] == ["7", "1,2"]  # timestamp order
    assert found.requests[1].block_tokens == (512, 388) and found.requests[1].family_block == 2
    assert found.skipped == ["t.jsonl:2: malformed JSON (Expecting value)", "t.jsonl:3: hash_ids is not a list of integers"]
    assert found.other_files == ["usage.jsonl"]


def test_a_trace_line_nested_too_deep_is_skipped_not_a_stopped_command(tmp_path):
    # a break test: `whatif routing --logs` stopped on RecursionError ("an unexpected error") at one such line
    from pipelines.lib.whatif.routing_inputs import _trace_record

    assert _trace_record('{"a":' + "[" * 5000 + "]" * 5000 + "}") == (None, "JSON nested too deeply")
