"""marts.whatif_routing kept up to date by replaying only the days whose inputs changed.

The routing replay (``routing_columns.ColumnReplay``, the mart's six policy and card-count pairs over a
day's rows in Arrow batches) reads nothing but the day's own usage rows: each card's cache starts cold
every day. So a day whose replay inputs are what its stored rows were computed from gives the same
rows again, and a window rebuilt for another reason (late data marking the days after it pending,
repricing every day after a price-book change) need not replay it. ``refresh`` compares each day's
digest of its inputs (``sql/whatif/routing__day_inputs.sql``, one scan of the window) and the mart's
settings with the digest recorded in ``stage.whatif_routing_inputs`` when the day was last replayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import duckdb
import numpy as np
import pyarrow as pa

from pipelines.lib.sql import statement
from pipelines.lib.warehouse import transaction
from pipelines.lib.whatif import routing, routing_columns, routing_inputs

MART_CARDS = (4, 8)  # card counts the routing mart compares (the CLI takes any --cards); the mart's six
# replays of a 5M-request day took 2.65 s column-wise, 46.1 s request by request (measured, bench/README.md)
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
    """Rows of ``marts.whatif_routing`` for each day's requests (``routing.Request`` lists), every policy over
    each of ``MART_CARDS``, replayed request by request (``routing.Replayer``): the reference the mart's
    column-wise replay (``day_rows``) is tested against."""
    rows = []
    for day, requests in sorted(by_day.items()):
        prompt = sum(r.prompt_tokens for r in requests)
        for cards in MART_CARDS:
            for policy in routing.POLICIES:
                result = routing.replay(requests, cards, policy)
                rows.append({"day": day, "policy": policy, "cards": cards, "requests": len(requests),
                             "prompt_tokens": prompt, **result.as_dict()})
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def day_rows(day: date, batches: Iterable[pa.RecordBatch], family_counts: Mapping[str, int]) -> list[dict]:
    """The mart's rows of one day whose usage rows come in Arrow ``batches`` (``prefix_family``,
    ``prompt_tokens``, ``cacheable_tokens``; in arrival order, read once, each batch fed to every policy and
    card count, so only one batch is held at a time); ``family_counts``: requests per family of the day."""
    families = pa.array(list(family_counts), pa.string())
    replays = [(cards, policy, routing_columns.ColumnReplay(cards, policy, family_counts, families))
               for cards in MART_CARDS for policy in routing.POLICIES]
    requests = prompt = 0
    for batch in batches:
        codes = routing_columns.family_codes(batch, families)
        prompts = batch["prompt_tokens"].to_numpy(zero_copy_only=False).astype(np.int64)
        cacheable = batch["cacheable_tokens"].to_numpy(zero_copy_only=False).astype(np.int64)
        requests += len(codes)
        prompt += int(prompts.sum())
        spans = routing_columns.span_ranks(cacheable)
        for _, _, replay in replays:
            replay.feed(codes, prompts, cacheable, spans)
    return [{"day": day, "policy": policy, "cards": cards, "requests": requests, "prompt_tokens": prompt,
             **replay.result().as_dict()} for cards, policy, replay in replays]


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
        rows += day_rows(day, routing_inputs.usage_request_batches(conn, day, after, sum(counts.values())), counts)
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
