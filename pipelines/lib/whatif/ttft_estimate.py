"""Time to first token that caching saved, per prefix family: measured where logged, estimated where not.

``family_rows(conn)`` reads each family's usage (``sql/whatif/ttft__family_usage.sql``); ``estimate(rows,
num_parameters, peak_tflops, utilization)`` adds the prefill seconds the cache reads of the requests
that logged no time to first token saved, by the 2-FLOPs-per-parameter rule (``prefill``):
``2 x num_parameters x cache_read_tokens / (peak_tflops x 10^12 x utilization)`` seconds. Inputs are
the user's: ``num_parameters`` from the model config file, the card's peak dense TFLOP/s at the
model's dtype and the fraction of it prefill sustains. Attention FLOPs and queueing are left out, so
the estimate is a floor on long contexts and says nothing about a busy server's queue.
"""

from __future__ import annotations

from datetime import date

import duckdb

from pipelines.lib.sql import statement
from pipelines.lib.whatif import prefill

FAMILY_KEYS = ("prefix_family", "provider", "model", "tenant", "app")


def family_rows(conn: duckdb.DuckDBPyConnection, start: date | None = None, end: date | None = None) -> list[dict]:
    """One dict per family over the UTC days ``[start, end)`` (all days when None), busiest first:
    ``FAMILY_KEYS``, ``requests``, ``unmeasured_requests`` / ``unmeasured_hit_requests`` /
    ``unmeasured_cache_read_tokens`` (requests that logged no TTFT), ``measured_requests`` and
    ``measured_median_ttft_saved_ms`` (miss median - hit median of the logged TTFTs, ms; None unless both)."""
    cursor = conn.execute(statement("whatif/ttft__family_usage"), {"start": start, "end": end})
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def estimate(rows: list[dict], num_parameters: int, peak_tflops: float,
             utilization: float = prefill.DEFAULT_UTILIZATION) -> list[dict]:
    """``rows`` with ``prefill_seconds_saved`` (the unmeasured hits' cache reads, seconds) and
    ``prefill_seconds_saved_per_hit`` (None without hits) added. Raises ``ValueError`` on a
    non-positive or non-finite throughput or a utilization outside (0, 1], with rows or without."""
    prefill.check_card(peak_tflops, utilization)
    out = []
    for row in rows:
        seconds = prefill.prefill_seconds(num_parameters, row["unmeasured_cache_read_tokens"], peak_tflops, utilization)
        hits = row["unmeasured_hit_requests"]
        out.append({**row, "prefill_seconds_saved": seconds,
                    "prefill_seconds_saved_per_hit": seconds / hits if hits else None})
    return out
