-- fast_items: per-file scratch table (connection-local) of the fast lane's results, one row per
-- non-blank line in file order (rowid + 1 = line number); fast_items__read_jsonl.sql replaces it
-- when the lane applies. Created empty first, with file_rows' column types plus accepted (false:
-- deferred to the general normaliser; request_id null: the line's own id; has_request), so the file_items view binds.
create or replace temp table fast_items as
select
    source_format, true as accepted, request_id, ts, provider, model, tenant, app, service_tier, inference_geo, speed, prefix_family,
    prompt_tokens, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens,
    output_tokens, reasoning_tokens, request_count, tier_prompt_tokens, latency_ms, ttft_ms, latency_issue,
    usage_issue, unmapped_usage,
    false as has_request  -- the line logs a request body (read again for its fingerprint)
from file_rows
where false;
