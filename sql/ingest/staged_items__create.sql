-- staged_general: the normalised records of the batch being staged that the view staged_items
-- (staged_items__create_view.sql) does not read from fast_items itself, under their own file and line: the general
-- normaliser's rows (file_rows, accepted or rejected), and the fast lane's accepted ones (fast_items) when the batch
-- has many files (the variable staged_lane_file is null; one large file's lane rows stay in fast_items, read through
-- the view). The batch numbers its records as one sequence (file f's line n is batch_line base + n; registered table
-- batch_files: source_file, base, span, ...) so many small files are normalised in one pass; this maps each back to
-- (source_file, source_line). A record that carries no id of its own gets line_request_id of its file and line; a
-- batch result's custom_id is scoped to its file. A table: streamed snapshots, which only the general normaliser
-- reads (formats.py refuses a fast_lane format with the snapshots option), are superseded by an update
-- (staged_items__supersede_snapshots.sql).
-- Parameters: $lane_offset (a fast-lane row's batch_line is its rowid + $lane_offset) and
-- $batch_marker (what the normaliser was given as $source_file).
create or replace temp table staged_general as
with items as (
    select * from file_rows
    union all by name
    select
        i.rowid + $lane_offset as source_line,
        0 as source_item,
        i.source_format,
        null::varchar as reason,
        null::varchar as raw_excerpt,
        i.request_id,
        i.ts, i.provider, i.model, i.tenant, i.app, i.service_tier, i.prefix_family, i.prompt_tokens,
        i.uncached_input_tokens, i.cache_read_tokens, i.cache_write_5m_tokens, i.cache_write_1h_tokens,
        i.output_tokens, i.reasoning_tokens, null::varchar as hash_ids, null::bigint as trace_offset_ms,
        i.request_count, null::decimal(38, 15) as reported_cost_usd, i.tier_prompt_tokens, i.latency_ms, i.ttft_ms,
        i.latency_issue, i.usage_issue, i.unmapped_usage
    from fast_items i
    where i.accepted and getvariable('staged_lane_file') is null
)
select
    b.source_file,
    i.source_line - b.base as source_line,
    i.source_line as batch_line,
    i.* exclude (source_line, request_id),
    case
        when i.request_id is null then line_request_id(b.source_file, i.source_line - b.base, i.source_item)
        when starts_with(i.request_id, 'batch:' || $batch_marker || ':')
            then 'batch:' || b.source_file || ':' || substr(i.request_id, length('batch:' || $batch_marker || ':') + 1)
        else i.request_id
    end as request_id
from items i
-- the file whose range [base, base + span) holds the number (the ranges do not overlap). A range join, not an
-- ASOF join: with one file (a large file is a batch alone) DuckDB loops over its one row, where an ASOF join
-- sorted every record (measured on a 5M-record file: 3.2 s against 18.5 s; bench/README.md)
join batch_files b on i.source_line >= b.base and i.source_line < b.base + b.span;
