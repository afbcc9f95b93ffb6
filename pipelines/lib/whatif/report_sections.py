"""The report's what-if sections: routing policies compared, cache TTL switches that pay, KV memory.

``load(conn, start, end)`` reads the frames for the UTC days ``[start, end)`` (money as float for
display only; the marts keep DECIMAL); ``html(frames, table)`` renders them with the report's own
table helper. The KV section sizes each busy family's mean cached span on ``REFERENCE_MODEL`` in
``REFERENCE_CACHE_GB`` (``cachemeter whatif kv`` answers for any model and size).
"""

from __future__ import annotations

import html as escape
from collections.abc import Callable
from datetime import date

import duckdb
import pandas as pd

from pipelines.lib.sql import statement
from pipelines.lib.whatif import kv_memory

REFERENCE_MODEL = "llama-3.1-70b"
REFERENCE_CACHE_GB = 8
TOP_ROWS = 10


def load(conn: duckdb.DuckDBPyConnection, start: date, end: date) -> dict[str, pd.DataFrame]:
    """``routing``, ``ttl`` and ``kv`` frames for the days ``[start, end)``; empty frames on a warehouse
    built before the what-if marts existed."""
    params = {"start": start, "end": end}
    try:
        routing = conn.execute(statement("whatif/report__routing"), params).df()
        ttl = conn.execute(statement("whatif/report__ttl_switches"), {**params, "limit": TOP_ROWS}).df()
    except duckdb.CatalogException:
        return {"routing": pd.DataFrame(), "ttl": pd.DataFrame(), "kv": pd.DataFrame()}
    for column in ("cost_now_usd", "cost_after_usd", "saving_per_day_usd"):
        ttl[column] = ttl[column].astype(float)
    kv = conn.execute(statement("whatif/report__family_spans"), {**params, "limit": TOP_ROWS}).df()
    model = kv_memory.load_model_config(REFERENCE_MODEL)
    copy_bytes = kv["mean_cached_span_tokens"].astype("int64") * model.kv_bytes_per_token
    kv["kv_mb_per_copy"] = (copy_bytes / 1e6).round(1)
    kv[f"copies_in_{REFERENCE_CACHE_GB}_gb"] = [REFERENCE_CACHE_GB * kv_memory.GB // b if b else None for b in copy_bytes]
    return {"routing": routing, "ttl": ttl, "kv": kv}


def html(frames: dict[str, pd.DataFrame], table: Callable[..., str]) -> str:
    """The three sections as HTML (``table(frame, money=..., rates=...)`` renders one table)."""
    if not frames:
        return ""
    shares = ("token_hit_rate", "busiest_card_request_share", "busiest_card_prefill_share")
    return (
        "<h2>What if: routing by prefix</h2><p>Each day's requests replayed over n cards with their own "
        "infinite prefix cache: round robin (cache-blind), prefix hashing, and prefix hashing with the hot "
        "family split over two cards (<code>cachemeter whatif routing</code>).</p>"
        f"{table(frames['routing'], rates=shares)}"
        "<h2>What if: a longer cache TTL</h2><p>Families whose other write retention (5 minutes or 1 hour, "
        "a read refreshing it) would have cost less than what they were billed, in USD per day.</p>"
        f"{table(frames['ttl'], money=('cost_now_usd', 'cost_after_usd', 'saving_per_day_usd'))}"
        f"<h2>What if: KV memory</h2><p>The busiest families' mean cached span held as KV cache by "
        f"{escape.escape(REFERENCE_MODEL)}, and how many copies fit in {REFERENCE_CACHE_GB} GB "
        "(<code>cachemeter whatif kv</code> for another model or size).</p>"
        f"{table(frames['kv'])}")
