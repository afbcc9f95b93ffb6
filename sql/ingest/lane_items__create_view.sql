-- lane_items: the fast lane's accepted rows (fast_items) as staged records, numbered in the batch: source_line is the
-- batch number, rowid + the variable staged_lane_offset (SET VARIABLE by stage._create_staged_items; a view takes no
-- parameters). Read by staged_items__create.sql (a batch of many files) or staged_items__create_view.sql (one file).
create or replace temp view lane_items as
select
    i.rowid + getvariable('staged_lane_offset')::bigint as source_line,
    0 as source_item,
    i.source_format,
    null::varchar as reason,
    null::varchar as raw_excerpt,
    i.request_id,
    i.ts, i.provider, i.model, i.tenant, i.app, i.service_tier, i.inference_geo, i.speed, i.prefix_family, i.prompt_tokens,
    i.uncached_input_tokens, i.cache_read_tokens, i.cache_write_5m_tokens, i.cache_write_1h_tokens,
    i.output_tokens, i.reasoning_tokens, null::varchar as hash_ids, null::bigint as trace_offset_ms,
    i.request_count, null::decimal(38, 15) as reported_cost_usd, i.tier_prompt_tokens, i.latency_ms, i.ttft_ms,
    i.latency_issue, i.usage_issue, i.unmapped_usage
from fast_items i
where i.accepted;
