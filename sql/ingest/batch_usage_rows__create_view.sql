-- batch_usage_rows: the rows a batch publishes to core.usage (staged_items' accepted records, with the prompt
-- fingerprints of those that logged a request body), every column but the catalogue id (usage__insert_batch.sql adds
-- it). Read twice: by pending_days__insert_batch.sql, which compares a day's rows before and after the batch, and by
-- usage__insert_batch.sql, which inserts them. Prefix family, in order of evidence: an explicit key or trace block
-- chain (set by the normaliser), else the body fingerprint, else the series.
create or replace temp view batch_usage_rows as
select
    f.request_id,
    f.ts,
    utc_day(f.ts) as day,
    f.source_format,
    f.provider,
    f.model,
    f.tenant,
    f.app,
    f.request_count,
    coalesce(f.service_tier = 'batch', false) as is_batch,
    f.service_tier,
    f.inference_geo,
    f.speed,
    case when f.prefix_family like 'series:%' then coalesce(p.family, f.prefix_family) else f.prefix_family end as prefix_family,
    f.prompt_tokens,
    f.uncached_input_tokens,
    f.cache_read_tokens,
    f.cache_write_5m_tokens,
    f.cache_write_1h_tokens,
    f.output_tokens,
    f.reasoning_tokens,
    f.source_file,
    f.source_line,
    f.source_item,
    f.reported_cost_usd,
    f.tier_prompt_tokens,
    f.latency_ms,
    f.ttft_ms,
    f.latency_issue,
    f.usage_issue,
    f.unmapped_usage,
    p.system_sha,
    p.tools_sha,
    p.opening_hashes,
    p.rendered_chars,
    p.divergence_offset_chars,
    p.divergence_span
from staged_items f
-- a record's fingerprint is its line's, for the line's first item only. The item test sits inside the key:
-- as a separate condition on the left table alone it turned the join into a nested loop (every staged row
-- against every fingerprint: 40.5 s for 100,000 records with bodies, growing with the square)
left join file_fingerprints p on p.source_line = case when f.source_item = 0 then f.batch_line end
where f.reason is null;
