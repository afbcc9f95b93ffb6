-- staged_items: every normalised record of the batch being staged, under its own file and line: staged_general
-- (staged_items__create.sql) and, when the batch is one file, the fast lane's accepted rows read from fast_items here.
-- A view, not a copy: one large file's lane rows are the whole day (5M rows at 5M requests), and a second temp table
-- of them went over the memory limit, was written to disk and read back (bench/README.md, "staged_items as a view");
-- each reader of the view reads only the lane columns it needs, with no join (a one-file batch's base is 0).
-- Variables (SET VARIABLE, by stage._create_staged_items; a view takes no parameters): staged_lane_file VARCHAR (the
-- one file's name, else null: the lane's rows are in staged_general), staged_lane_offset BIGINT (a lane row's line
-- is its rowid + it), staged_batch_marker VARCHAR (stage.BATCH_MARKER). Ids are minted and scoped as in
-- staged_items__create.sql (the lane mints none: an id of the log's own that spells a batch-scoped one is rewritten).
create or replace temp view staged_items as
select * from staged_general
union all by name
select
    getvariable('staged_lane_file')::varchar as source_file,
    i.rowid + getvariable('staged_lane_offset')::bigint as source_line,
    i.rowid + getvariable('staged_lane_offset')::bigint as batch_line,
    0 as source_item,
    i.source_format,
    null::varchar as reason,
    null::varchar as raw_excerpt,
    i.ts, i.provider, i.model, i.tenant, i.app, i.service_tier, i.prefix_family, i.prompt_tokens,
    i.uncached_input_tokens, i.cache_read_tokens, i.cache_write_5m_tokens, i.cache_write_1h_tokens,
    i.output_tokens, i.reasoning_tokens, null::varchar as hash_ids, null::bigint as trace_offset_ms,
    i.request_count, null::decimal(38, 15) as reported_cost_usd, i.tier_prompt_tokens, i.latency_ms, i.ttft_ms,
    i.latency_issue, i.usage_issue, i.unmapped_usage,
    case
        when i.request_id is null
            then line_request_id(getvariable('staged_lane_file'), i.rowid + getvariable('staged_lane_offset'), 0)
        when starts_with(i.request_id, 'batch:' || getvariable('staged_batch_marker') || ':')
            then 'batch:' || getvariable('staged_lane_file') || ':'
                 || substr(i.request_id, length('batch:' || getvariable('staged_batch_marker') || ':') + 1)
        else i.request_id
    end as request_id
from fast_items i
where i.accepted and getvariable('staged_lane_file') is not null;
