"""What-if analysis: what caching would give under another routing, cache TTL or KV-cache size.

One module per concern: ``routing`` (replay requests over n cards under a routing policy),
``routing_inputs`` (requests from block-hash traces or from ``core.usage``), ``kv_memory`` (KV bytes
per token from a model config, copies and seats that fit), ``prefill`` (prefill FLOPs and seconds
by the 2-FLOPs-per-parameter rule), ``ttft_estimate`` (per family: TTFT saved, measured or
estimated from prefill), ``report_sections`` (the report's what-if tables). The cache
TTL what-if is set-based SQL (``sql/whatif/cache_ttl__insert_window.sql``).
"""
