-- file_items: every normalised record of the file being staged: the general normaliser's rows
-- (file_rows, accepted or rejected) and the fast lane's accepted ones, read where they lie.
create or replace temp view file_items as
select * from file_rows
union all by name
select
    i.rowid + 1 as source_line,
    0 as source_item,
    i.source_format,
    null::varchar as reason,
    null::varchar as raw_excerpt,
    coalesce(i.request_id, line_request_id(s.source_file, i.rowid + 1, 0)) as request_id,
    i.ts, i.provider, i.model, i.tenant, i.app, i.service_tier, i.prefix_family, i.prompt_tokens,
    i.uncached_input_tokens, i.cache_read_tokens, i.cache_write_5m_tokens, i.cache_write_1h_tokens,
    i.output_tokens, i.reasoning_tokens, null::varchar as hash_ids, null::bigint as trace_offset_ms,
    i.request_count, null::decimal(38, 15) as reported_cost_usd, i.tier_prompt_tokens
from fast_items i
cross join staged_file s
where i.accepted;
