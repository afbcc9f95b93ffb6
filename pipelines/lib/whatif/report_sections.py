"""The report's what-if sections: routing policies compared, cache TTL switches that pay, KV memory,
time to first token (measured hits against misses, and estimated where no latency is logged).

``load(conn, start, end)`` reads the frames for the UTC days ``[start, end)`` (money as float for
display only; the marts keep DECIMAL); ``html(frames, table)`` renders them with the report's own
table helper. The KV section sizes each busy family's mean cached span on ``REFERENCE_MODEL`` in
``REFERENCE_CACHE_GB`` (``cachemeter whatif kv`` answers for any model and size); the TTFT estimate
prices the cache reads of families that logged no latency on ``REFERENCE_MODEL`` and a card of
``REFERENCE_CARD_TFLOPS`` at ``prefill.DEFAULT_UTILIZATION`` (``cachemeter whatif ttft`` for others).
"""

from __future__ import annotations

import html as escape
from collections.abc import Callable
from datetime import date

import duckdb
import pandas as pd

from pipelines.lib.sql import statement
from pipelines.lib.whatif import kv_memory, prefill, ttft_estimate

REFERENCE_MODEL = "llama-3.1-70b"
REFERENCE_CACHE_GB = 8
REFERENCE_CARD_TFLOPS = 989  # an H100 SXM's dense BF16 peak (NVIDIA's datasheet)
TOP_ROWS = 10


def load(conn: duckdb.DuckDBPyConnection, start: date, end: date) -> dict[str, pd.DataFrame]:
    """``routing``, ``ttl``, ``kv``, ``ttft`` and ``ttft_estimate`` frames for the days ``[start, end)``;
    empty frames on a warehouse built before the what-if marts existed."""
    params = {"start": start, "end": end}
    try:
        routing = conn.execute(statement("whatif/report__routing"), params).df()
        ttl = conn.execute(statement("whatif/report__ttl_switches"), {**params, "limit": TOP_ROWS}).df()
        replayed = conn.execute("select count(distinct prefix_family) from marts.whatif_cache_ttl "
                                "where day >= $start and day < $end", params).fetchone()[0]
        ttft = conn.execute(statement("whatif/report__ttft"), {**params, "limit": TOP_ROWS}).df()
    except duckdb.CatalogException:
        return {name: pd.DataFrame() for name in ("routing", "ttl", "kv", "ttft", "ttft_estimate")}
    for column in ("cost_now_usd", "cost_after_usd", "saving_per_day_usd"):
        ttl[column] = ttl[column].astype(float)
    kv = conn.execute(statement("whatif/report__family_spans"), {**params, "limit": TOP_ROWS}).df()
    model = kv_memory.load_model_config(REFERENCE_MODEL)
    copy_bytes = kv["mean_cached_span_tokens"].astype("int64") * model.kv_bytes_per_token
    kv["kv_mb_per_copy"] = (copy_bytes / 1e6).round(1)
    kv[f"copies_in_{REFERENCE_CACHE_GB}_gb"] = [REFERENCE_CACHE_GB * kv_memory.GB // b if b else None for b in copy_bytes]
    ttl.attrs["replayed_families"] = replayed  # what an empty table means (ttl_note)
    return {"routing": routing, "ttl": ttl, "kv": kv, "ttft": ttft,
            "ttft_estimate": _ttft_estimate(conn, start, end, model.num_parameters)}


def ttl_note(ttl: pd.DataFrame) -> str:
    """What an empty TTL table means (HTML; "" when it has rows): no replayed family's other TTL would have cost
    less, or no family could be replayed at all, because the replay prices both retention options at list rates
    and so needs cache traffic on a model whose 5-minute and 1-hour cache writes are priced, and differently
    (Anthropic's Claude models, for one; OpenAI's are priced as input either way: catalogue._tier_rows). A ``--prices`` row without
    ``cache_write_1h_per_mtok`` leaves its model out; before, the section said "None." either way."""
    if not ttl.empty:
        return ""
    replayed = ttl.attrs.get("replayed_families", 0)
    if replayed:
        return f"<p>None: every family replayed ({replayed:,}) cost the least with the retention it uses now.</p>"
    return ("<p>No family could be replayed: the what-if needs cache reads or writes on a model whose 5-minute and "
            "1-hour cache writes have prices of their own (Anthropic's Claude models, for one). A model without, or "
            "whose <code>--prices</code> row has no <code>cache_write_1h_per_mtok</code>, is left out.</p>")


def _ttft_estimate(conn: duckdb.DuckDBPyConnection, start: date, end: date, num_parameters: int) -> pd.DataFrame:
    """The busiest families whose cache hits logged no TTFT, with the prefill seconds those reads saved (from the
    families' day rows: ``sql/whatif/report__ttft_estimate.sql``)."""
    cursor = conn.execute(statement("whatif/report__ttft_estimate"), {"start": start, "end": end, "limit": TOP_ROWS})
    rows = [dict(zip([d[0] for d in cursor.description], row)) for row in cursor.fetchall()]
    estimated = ttft_estimate.estimate(rows, num_parameters, REFERENCE_CARD_TFLOPS)
    return pd.DataFrame([{
        "prefix_family": r["prefix_family"], "provider": r["provider"], "model": r["model"], "app": r["app"],
        "hits": r["unmeasured_hit_requests"], "cache_read_tokens": r["unmeasured_cache_read_tokens"],
        "est_prefill_seconds_saved": round(r["prefill_seconds_saved"], 3),
        "est_seconds_per_hit": round(r["prefill_seconds_saved_per_hit"], 4)} for r in estimated])


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
        "a read refreshing it) would have cost less than they cost now, both at list prices, in USD per day. "
        "Replayed from "
        "the log: an entry a longer TTL keeps alive is read at the family's match rate, the share of reads it "
        "got while its entry was alive (a rotating preamble's is near 0).</p>"
        f"{ttl_note(frames['ttl']) or table(frames['ttl'], money=('cost_now_usd', 'cost_after_usd', 'saving_per_day_usd'), rates=('match_rate',))}"
        f"<h2>What if: KV memory</h2><p>The busiest families' mean cached span held as KV cache by "
        f"{escape.escape(REFERENCE_MODEL)}, and how many copies fit in {REFERENCE_CACHE_GB} GB "
        "(<code>cachemeter whatif kv</code> for another model or size).</p>"
        f"{table(frames['kv'])}"
        "<h2>Time to first token: cache hits against misses</h2><p>Where the logs carry latency (gateway and "
        "tracing rows, OTel spans): median and p95 time to first token in ms of requests that read from the "
        "cache against those that did not (<code>marts.ttft_by_family</code>).</p>"
        f"{table(frames.get('ttft', pd.DataFrame()))}"
        "<h2>What if: prefill seconds the cache saved</h2><p>Families whose cache hits logged no latency: "
        f"the prefill time their cache reads skipped on {escape.escape(REFERENCE_MODEL)} (2 FLOPs per parameter "
        f"per token) on a {REFERENCE_CARD_TFLOPS} TFLOP/s card at {prefill.DEFAULT_UTILIZATION:.0%} of peak, an "
        "estimate (<code>cachemeter whatif ttft</code> for another model or card).</p>"
        f"{table(frames.get('ttft_estimate', pd.DataFrame()))}")
