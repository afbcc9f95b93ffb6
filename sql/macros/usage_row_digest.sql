-- usage_row_digest(r): a hash of every column a batch publishes of a core.usage row (r: a row of core.usage or of
-- batch_usage_rows, as a struct: `usage_row_digest(u) from core.usage u`), the catalogue id aside. Summed per day, it
-- tells whether a file staged again changed the day's rows (pending_days__insert_batch.sql).
create or replace macro usage_row_digest(r) as hash(
    r.request_id, r.ts, r.day, r.source_format, r.provider, r.model, r.tenant, r.app, r.request_count, r.is_batch,
    r.service_tier, r.inference_geo, r.speed, r.prefix_family, r.prompt_tokens, r.uncached_input_tokens, r.cache_read_tokens,
    r.cache_write_5m_tokens, r.cache_write_1h_tokens, r.output_tokens, r.reasoning_tokens, r.source_file,
    r.source_line, r.source_item, r.reported_cost_usd, r.tier_prompt_tokens, r.latency_ms, r.ttft_ms, r.latency_issue,
    r.usage_issue, r.unmapped_usage, r.system_sha, r.tools_sha, r.opening_hashes, r.rendered_chars,
    r.divergence_offset_chars, r.divergence_span);
