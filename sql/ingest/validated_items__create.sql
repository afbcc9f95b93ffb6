-- General normaliser, stage 3 of 4: who and what each item is, and why it is rejected. From fielded_items
-- (stage 2: each item's fields, read by its format's sql/ingest/fields/<format>.sql, with its format's
-- convention and options as columns) into validated_items: the model (Azure deployments mapped), the
-- provider (named, else implied by the format, else by the model's family), and field_error, the first
-- reason the item cannot be counted (null: it can; the order of the checks decides which reason is given),
-- and its latency_ms and ttft_ms (ms, from the latency fields; never billed, never a reason: one that
-- cannot be used is left null and named in latency_issue).
-- Regions between `-- <generated NAME>` and `-- </generated>` are written from pipelines/ingest/formats.yaml by
-- `python -m pipelines.ingest.format_sql` (drift-tested); the rest is hand-written.
-- Parameters: $model (source.yaml default, may be null), $deployment_names / $deployment_models (source.yaml
-- deployments: Azure deployment -> model), $block_size (tokens per trace block).
create or replace temp table validated_items as
with
identified as (
    select
        f.*,
        coalesce(
            case when list_contains($deployment_names::varchar[], coalesce(f.env_model, f.body_model, $model))
                 then ($deployment_models::varchar[])[list_position($deployment_names::varchar[], coalesce(f.env_model, f.body_model, $model))] end,
            f.env_model, f.body_model, $model) as model_reported,
        coalesce(
            f.declared_provider,
            f.body_provider,
            case when f.provider_from_package then regexp_extract(f.body_package, '@ai-sdk/([a-z-]+)', 1) end,
            case when f.provider_from_model_prefix and coalesce(f.body_model, '') like '%/%'
                 then lower(split_part(f.body_model, '/', 1)) end
        ) as named_provider
    from fielded_items f
),
providers as (
    select
        i.*,
        coalesce(
            provider_alias(i.named_provider),
            case
                -- a name outside lib/providers.PROVIDERS is no reason to drop a well-formed record (issue 18): it
                -- is priced as the catalogue's provider of its model, else kept under its own name, unpriced
                -- ("no price for ..."); core.usage.usage_issue says which (file_rows__insert_normalised.sql)
                when i.named_provider is not null
                    then coalesce(provider_of_model(i.model_reported), lower(trim(i.named_provider)))
                when i.inferred_provider <> 'by_model' then i.inferred_provider
                when i.body_names_upstream and i.model_reported like '%/%' then 'openrouter'
                else coalesce(provider_of_model(i.model_reported), i.default_provider)
            end
        ) as provider,
        i.named_provider is not null and provider_alias(i.named_provider) is null as provider_unknown
    from identified i
),
latency_fields as (
    -- the latency fields read: instants in microseconds (span times: nanoseconds // 1000), durations in
    -- ms (DECIMAL(18, 3)); null where absent or unreadable (every step is try: latency never fails a row)
    select
        c.*,
        case when c.span is not null then try_cast(try_cast(c.span ->> '$.startTimeUnixNano' as hugeint) // 1000 as bigint)
             else try(epoch_us(utc_instant(c.v_start_at ->> '$'))) end as start_us,
        case when c.span is not null then try_cast(try_cast(c.span ->> '$.endTimeUnixNano' as hugeint) // 1000 as bigint)
             else try(epoch_us(utc_instant(c.v_end_at ->> '$'))) end as end_us,
        case when c.span is not null then json_present(c.span -> '$.endTimeUnixNano') else c.v_end_at end as end_raw,
        try(epoch_us(utc_instant(c.v_first_token_at ->> '$'))) as first_token_us,
        coalesce(try_cast(c.v_latency_ms ->> '$' as decimal(18, 3)),
                 try(try_cast(try_cast(c.v_latency_s ->> '$' as decimal(18, 6)) * 1000 as decimal(18, 3)))) as latency_logged_ms,
        coalesce(try_cast(c.v_ttft_ms ->> '$' as decimal(18, 3)),
                 try(try_cast(try_cast(c.v_ttft_s ->> '$' as decimal(18, 6)) * 1000 as decimal(18, 3)))) as ttft_logged_ms
    from providers c
),
latency_candidates as (
    -- the difference of the logged instants wins over the source's own rounded duration
    select
        l.*,
        coalesce(try(try_cast(l.end_us - l.start_us as decimal(18, 0)) * 0.001), l.latency_logged_ms) as latency_candidate_ms,
        coalesce(try(try_cast(l.first_token_us - l.start_us as decimal(18, 0)) * 0.001), l.ttft_logged_ms) as ttft_candidate_ms
    from latency_fields l
),
clocked as (
    -- a latency that cannot be read or is out of order is left null and named; the row is kept
    select
        l.*,
        case when l.latency_candidate_ms >= 0 then l.latency_candidate_ms end as latency_ms,
        case when l.ttft_candidate_ms >= 0 and not coalesce(l.ttft_candidate_ms > l.latency_candidate_ms, false)
             then l.ttft_candidate_ms end as ttft_ms,
        nullif(concat_ws('; ',
            case when l.v_start_at is not null and l.start_us is null
                then 'start time is not an ISO-8601 instant (' || left(l.v_start_at::varchar, 40) || ')' end,
            case when l.end_raw is not null and l.end_us is null
                then 'end time is not ' || case when l.span is not null then 'an integer of nanoseconds' else 'an ISO-8601 instant' end
                     || ' (' || left(l.end_raw::varchar, 40) || ')' end,
            case when l.v_first_token_at is not null and l.first_token_us is null
                then 'first-token time is not an ISO-8601 instant (' || left(l.v_first_token_at::varchar, 40) || ')' end,
            case when coalesce(l.v_latency_ms, l.v_latency_s) is not null and l.latency_logged_ms is null
                then 'latency is not a number (' || left(coalesce(l.v_latency_ms, l.v_latency_s)::varchar, 40) || ')' end,
            case when coalesce(l.v_ttft_ms, l.v_ttft_s) is not null and l.ttft_logged_ms is null
                then 'time to first token is not a number (' || left(coalesce(l.v_ttft_ms, l.v_ttft_s)::varchar, 40) || ')' end,
            case when l.latency_candidate_ms < 0 then 'end before start (latency ' || l.latency_candidate_ms || ' ms)' end,
            case when l.ttft_candidate_ms < 0 then 'first token before start (' || l.ttft_candidate_ms || ' ms)' end,
            case when l.ttft_candidate_ms > l.latency_candidate_ms and l.latency_candidate_ms >= 0
                then 'first token after the end (' || l.ttft_candidate_ms || ' ms > latency ' || l.latency_candidate_ms || ' ms)' end
        ), '') as latency_issue
    from latency_candidates l
)
select
    x.*,
    coalesce(
        case when not x.is_object then 'record is JSON ' || x.json_kind || ', not an object' end,
        x.batch_error,
        case when x.source_format = 'stream' then x.b0_stream_error end,
        case when x.source_format is null and json_type(x.b, '$.engine_log') = 'OBJECT'
            then 'engine log, not per-request usage: an engine''s prefix-cache hit rate also counts recomputed '
                || '(preempted) requests, so it measures neither cross-request reuse nor billed tokens' end,
        case when x.source_format is null and json_type(x.b, '$.usage_api_fetch_failed') = 'VARCHAR'
            then 'usage API page not fetched: ' || (x.b ->> '$.usage_api_fetch_failed') end,  -- lib/usage_api/pages.py
        -- a usage key with no object in it said "unknown shape ... (top-level keys: ..., usage)" (a break test)
        case when x.source_format is null and json_type(x.b, '$.usage') is not null and json_type(x.b, '$.usage') <> 'OBJECT'
            then 'usage is ' || case when json_type(x.b, '$.usage') = 'NULL' then 'null' else 'not an object ('
                || lower(json_type(x.b, '$.usage')) || ')' end || ': the record reports no token counts' end,
        case when x.source_format is null then 'unknown shape: no recognised usage object (top-level keys: '
            || coalesce(array_to_string(json_keys(x.b)[1:12], ', '), '') || ')' end,
        x.structure_error,
        case when x.row_status = 'failure' then 'LiteLLM status failure: the provider call failed, nothing was billed' end,
        case when x.gateway_cache_hit then 'LiteLLM response-cache hit (cache_hit = true): answered by the gateway '
            || 'without a provider call, so no provider tokens were billed' end,
        case when x.provider is null then 'unknown provider: name one with an envelope "provider" or source.yaml provider' end,
        case when x.convention in ('inclusive', 'trace', 'total_decides') and x.v_prompt is null then 'missing prompt token count' end,
        case when x.convention = 'additive' and x.v_uncached is null then 'missing input token count' end,
        case when x.v_output is null and not coalesce(x.output_optional, false) then 'missing output token count' end,
        -- <generated token_checks: every count field of pipelines/ingest/formats.yaml, in its order>
        token_error(x.v_prompt, 'prompt tokens'),
        token_error(x.v_extra_prompt, 'extra prompt tokens'),
        token_error(x.v_uncached, 'input tokens'),
        token_error(x.v_read, 'cache read tokens'),
        token_error(x.v_hit, 'cache hit tokens'),
        token_error(x.v_miss, 'cache miss tokens'),
        token_error(x.v_write, 'cache write tokens'),
        token_error(x.v_write_5m, 'cache write 5m tokens'),
        token_error(x.v_write_1h, 'cache write 1h tokens'),
        token_error(x.v_output, 'output tokens'),
        token_error(x.v_output_extra, 'extra output tokens'),
        token_error(x.v_reasoning, 'reasoning tokens'),
        token_error(x.v_total, 'total tokens'),
        token_error(x.v_request_count, 'request count'),
        -- </generated>
        write_by_ttl_error(x.v_write_by_ttl),
        case when x.v_cost is not null and usd_of(x.v_cost) is null
            then 'reported cost is not a number of USD of at most 10^9 (' || left(x.v_cost::varchar, 40) || ')' end,
        case when try_cast(x.v_cost ->> '$' as decimal(38, 15)) < 0 or try_cast(x.env_cost ->> '$' as decimal(38, 15)) < 0
            then 'reported cost is negative' end,
        case when x.v_cost_ticks is not null and (json_type(x.v_cost_ticks) not in ('UBIGINT', 'BIGINT')
                                                  or try_cast(x.v_cost_ticks ->> '$' as hugeint) not between 0 and 10000000000000000000)
            then 'cost_in_usd_ticks is not a non-negative integer of 10^-10 USD of at most 10^9 USD (' || left(x.v_cost_ticks::varchar, 40) || ')' end,
        case when x.env_cost is not null and usd_of(x.env_cost) is null
            then 'reported_cost_usd is not a number of USD of at most 10^9 (' || left(x.env_cost::varchar, 40) || ')' end,
        case when x.convention = 'trace' and json_type(x.v_trace_ms) not in ('UBIGINT', 'BIGINT')
            then 'trace timestamp is not an integer number of milliseconds' end,
        case when x.convention = 'trace' and x.v_trace_ms::varchar::hugeint not between 0 and 3153600000000
            then 'trace timestamp out of range (' || left(x.v_trace_ms::varchar, 24) || ' ms; at most 100 years from trace_start)' end,
        case when x.convention = 'trace' and not list_bool_and(list_transform(
                json_extract(x.hash_ids, '$[*]'), lambda h: coalesce(json_type(h) in ('UBIGINT', 'BIGINT'), false)))
            then 'hash_ids must be integers' end,
        case when x.convention = 'trace' and json_array_length(x.hash_ids) <> ceil(token_value(x.v_prompt) / $block_size)
            then 'hash_ids has ' || json_array_length(x.hash_ids) || ' blocks, expected ceil(input_length / '
                || $block_size || ') = ' || ceil(token_value(x.v_prompt) / $block_size)::bigint end
    ) as field_error
from clocked x;
