"""marts.whatif_routing kept up to date by replaying only the days whose inputs changed.

The routing replay (``routing.replay``, Python, about 3 s per million requests for each of the six
policy and card-count pairs) reads nothing but the day's own usage rows: each card's cache starts cold
every day. So a day whose replay inputs are what its stored rows were computed from gives the same
rows again, and a window rebuilt for another reason (late data marking the days after it pending,
repricing every day after a price-book change) need not replay it. ``refresh`` compares each day's
digest of its inputs (``sql/whatif/routing__day_inputs.sql``, one scan of the window) and the mart's
settings with the digest recorded in ``stage.whatif_routing_inputs`` when the day was last replayed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import duckdb
import pyarrow as pa

from pipelines.lib.sql import statement
from pipelines.lib.warehouse import transaction
from pipelines.lib.whatif import routing, routing_inputs

MART_CARDS = (4, 8)  # card counts the routing mart compares (the CLI takes any --cards); each replay of a
# day costs about 3 s per million requests (measured), so the mart costs about 6 x that per replayed day
SETTINGS = f"cards={','.join(map(str, MART_CARDS))};policies={','.join(routing.POLICIES)}"
SCHEMA = pa.schema([("day", pa.date32()), ("policy", pa.string()), ("cards", pa.int32()), ("requests", pa.int64()),
                    ("prompt_tokens", pa.int64()), ("token_hit_rate", pa.float64()), ("prefill_tokens", pa.int64()),
                    ("busiest_card_request_share", pa.float64()), ("busiest_card_prefill_share", pa.float64()),
                    ("resident_copies_max", pa.int32()), ("evicted_tokens", pa.int64())])


@dataclass(frozen=True)
class Refreshed:
    """What ``refresh`` did to a window: days replayed, days kept as stored, days removed (no usage left)."""

    replayed_days: int
    kept_days: int
    removed_days: int


def routing_rows(by_day: dict) -> pa.Table:
    """Rows of ``marts.whatif_routing`` for each day's requests: every policy over each of ``MART_CARDS``."""
    rows = []
    for day, requests in sorted(by_day.items()):
        rows += day_rows(day, [requests], Counter(r.family for r in requests))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def day_rows(day: date, chunks: Iterable[Sequence[routing.Request]], family_counts: Mapping[str, int]) -> list[dict]:
    """The mart's rows of one day whose requests come in ``chunks`` (in arrival order; read once, each
    chunk fed to every policy and card count, so only one chunk is held at a time)."""
    replays = [(cards, policy, routing.CardAssigner(cards, policy, family_counts), routing.Replayer(cards))
               for cards in MART_CARDS for policy in routing.POLICIES]
    requests = prompt = 0
    for chunk in chunks:
        requests += len(chunk)
        prompt += sum(r.prompt_tokens for r in chunk)
        for _, _, assigner, replayer in replays:
            replayer.feed(chunk, assigner.assign(chunk))
    return [{"day": day, "policy": policy, "cards": cards, "requests": requests, "prompt_tokens": prompt,
             **replayer.result().as_dict()} for cards, policy, _, replayer in replays]


def refresh(conn: duckdb.DuckDBPyConnection, start: date, end: date) -> Refreshed:
    """Bring the rows of the UTC days ``[start, end)`` of marts.whatif_routing up to date, in one transaction.

    Replays (``day_rows``, day by day) only the days whose inputs or ``SETTINGS`` differ from those recorded at
    their last replay (or were never replayed); removes the rows of days left without usage rows; the
    other days keep their stored rows, which a replay would give again.
    """
    inputs = {day: f"{digest};{SETTINGS}" for day, digest in conn.execute(
        statement("whatif/routing__day_inputs"), {"start": start, "end": end}).fetchall()}
    recorded = dict(conn.execute("select day, inputs from stage.whatif_routing_inputs where day >= $start and day < $end",
                                 {"start": start, "end": end}).fetchall())
    stored = {row[0] for row in conn.execute("select distinct day from marts.whatif_routing where day >= $start and day < $end",
                                             {"start": start, "end": end}).fetchall()}
    stale = sorted(day for day, digest in inputs.items() if recorded.get(day) != digest or day not in stored)
    removed = sorted((set(recorded) | stored) - set(inputs))
    rows = []
    for day in stale:  # day by day, chunk by chunk: memory flat in the window's and the day's size
        after = date.fromordinal(day.toordinal() + 1)
        counts = routing_inputs.family_counts(conn, day, after)
        rows += day_rows(day, routing_inputs.usage_request_chunks(conn, day, after, sum(counts.values())), counts)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    done = pa.table({"day": pa.array(stale, pa.date32()), "inputs": pa.array([inputs[d] for d in stale], pa.string())})
    days = {"days": stale + removed}
    with transaction(conn):
        conn.execute(statement("whatif/routing__delete_days"), days)
        conn.execute(statement("whatif/routing_inputs__delete_days"), days)
        for name, relation, sql in (("routing_rows", table, "whatif/routing__insert_rows"),
                                    ("routing_inputs_in", done, "whatif/routing_inputs__insert")):
            conn.register(name, relation)
            try:
                conn.execute(statement(sql))
            finally:
                conn.unregister(name)
    return Refreshed(replayed_days=len(stale), kept_days=len(inputs) - len(stale), removed_days=len(removed))
