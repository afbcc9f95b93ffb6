-- Publish the fast lane's accepted records (temp table fast_items, file_rows__insert_fast_lane.sql)
-- into file_rows (rowid + 1 is the line number); the deferred ones go to the general normaliser.
insert into file_rows by name
select
    rowid + 1 as source_line,
    source_format,
    coalesce(request_id, 'line-' || md5($source_file || ':' || (rowid + 1))[1:20]) as request_id, ts, provider, model, tenant, app, service_tier, prefix_family,
    prompt_tokens, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens,
    output_tokens, reasoning_tokens, 0 as source_item, request_count, tier_prompt_tokens
from fast_items
where accepted;
