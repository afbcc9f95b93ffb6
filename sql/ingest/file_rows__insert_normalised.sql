-- General normaliser, stage 4 of 4: count, time and check each item of validated_items (stage 3) and
-- insert one file_rows row per item: accepted (reason null) with its token classes, or rejected with
-- the first reason (a field error from stage 3, a timestamp, or arithmetic that does not close). Nothing
-- is clamped; latency_ms, ttft_ms and latency_issue come from stage 3, unmapped_usage from
-- unmapped_usage__create.sql. The conventions (each format's, pipelines/ingest/formats.yaml):
--   inclusive: the prompt count contains cache reads and writes (uncached = prompt - read - write);
--   additive: the uncached remainder is reported beside them (a reported total is checked against the sum);
--   total_decides: inclusive unless the reported total shows the prompt count left the cache out;
--   trace: cache reads come from replaying block hashes through a cache model.
-- A JSON arrow after AND / OR / NOT or on the right of `=` is written in parentheses, `a or (j ->> '$') = 'x'`:
-- DuckDB 1.5 parses `a or j ->> '$' = 'x'` as `((a or j) ->> '$') = 'x'` (tests/sql/test_json_arrows.py).
-- Parameters: $tenant, $app, $default_ts (source.yaml defaults, may be null), $trace_start (ISO-8601 UTC
-- text or null), $earliest (first partition day), $latest (later is "the future").
insert into file_rows
with
counted as (
    select
        v.*,
        u.unmapped_usage,
        u.unmapped_tokens,
        token_value(v.v_prompt) + coalesce(token_value(v.v_extra_prompt), 0) as n_prompt_reported,
        token_value(v.v_uncached) as n_uncached_reported,
        coalesce(token_value(v.v_read), 0) as n_read,
        token_value(v.v_hit) as n_hit,
        token_value(v.v_miss) as n_miss,
        -- the flat 5m / 1h counts, else a per-TTL breakdown (Bedrock cacheDetails: a 1-hour write at the 1-hour rate)
        cache_write_5m_of(coalesce(token_value(v.v_write_5m), write_of_ttl(v.v_write_by_ttl, '5m')),
                          coalesce(token_value(v.v_write_1h), write_of_ttl(v.v_write_by_ttl, '1h')), token_value(v.v_write)) as n_write_5m,
        coalesce(token_value(v.v_write_1h), write_of_ttl(v.v_write_by_ttl, '1h'), 0) as n_write_1h,
        token_value(v.v_write) as n_write_reported,
        output_of(token_value(v.v_output), token_value(v.v_output_extra), token_value(v.v_reasoning),
                  list_contains(v.reasoning_beside_output, v.provider))
            + thinking_gap(token_value(v.v_total), token_value(v.v_prompt), token_value(v.v_output),
                           list_contains(v.thinking_only_in_total, v.provider)) as n_output,
        coalesce(token_value(v.v_reasoning), nullif(thinking_gap(token_value(v.v_total), token_value(v.v_prompt),
            token_value(v.v_output), list_contains(v.thinking_only_in_total, v.provider)), 0)) as n_reasoning,
        token_value(v.v_total) as n_total
    from validated_items v
    left join unmapped_usage u using (source_line, source_item)  -- keys no class maps (kept beside the row)
    where v.field_error is null
),
resolved as (
    select
        c.*,
        -- total_decides: a total equal to prompt + cache + output shows the prompt count left the cache out
        case
            when c.convention <> 'total_decides' then c.convention
            when c.n_read + c.n_write_5m + c.n_write_1h > 0
                and c.n_total = c.n_prompt_reported + c.n_read + c.n_write_5m + c.n_write_1h + c.n_output then 'additive'
            else 'inclusive'
        end as applied_convention
    from counted c
),
classed as (
    select
        c.*,
        -- a trace's uncached count follows its cache replay (file_rows__apply_replay.sql)
        case when c.applied_convention <> 'trace' then uncached_input_of(c.applied_convention = 'additive', c.n_prompt_reported,
            c.n_uncached_reported, c.n_read, c.n_write_5m, c.n_write_1h) end as n_uncached,
        whole_prompt_of(c.applied_convention = 'additive', c.n_prompt_reported, c.n_uncached_reported, c.n_read, c.n_write_5m,
            c.n_write_1h) as n_prompt
    from resolved c
),
timed as (
    select
        c.*,
        case
            when json_type(c.env_ts) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try(to_timestamp(c.env_ts::varchar::double))
            when json_type(c.env_ts) = 'VARCHAR' then utc_instant(c.env_ts ->> '$')
            when c.env_ts is not null then null
            when c.convention = 'trace' then utc_instant($trace_start) + to_milliseconds(token_value(c.v_trace_ms))
            when c.span is not null and (c.span ->> '$.startTimeUnixNano') is not null
                then try(to_timestamp(0) + to_microseconds(try_cast(try_cast(c.span ->> '$.startTimeUnixNano' as hugeint) // 1000 as bigint)))
            when json_type(c.v_epoch) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try(to_timestamp(c.v_epoch::varchar::double))
            when c.body_iso is not null then utc_instant(c.body_iso)
            when $default_ts is not null then utc_instant($default_ts)
        end as ts,
        case
            when c.env_ts is not null then 'envelope ts ' || left(c.env_ts::varchar, 40)
            when c.convention = 'trace' and $trace_start is null then 'trace record has a relative timestamp but source.yaml sets no trace_start'
            when c.convention = 'trace' then 'trace_start ' || $trace_start
            when c.span is not null and (c.span ->> '$.startTimeUnixNano') is not null
                then 'span startTimeUnixNano ' || left(c.span ->> '$.startTimeUnixNano', 40)
            when c.v_epoch is not null then 'body time ' || left(c.v_epoch::varchar, 40)
            when c.body_iso is not null then 'body time ' || left(c.body_iso, 40)
            when $default_ts is not null then 'source.yaml ts ' || $default_ts
        end as ts_origin
    from classed c
),
checked as (
    select
        t.*,
        coalesce(
            case when t.ts is null and t.ts_origin is null
                then 'no timestamp: add an envelope with "ts" (ISO-8601 or epoch seconds), or ts in source.yaml' end,
            case when t.ts is null and t.convention = 'trace' and $trace_start is null then t.ts_origin end,
            case when t.ts is null then 'unparseable timestamp: ' || t.ts_origin end,
            case when not isfinite(t.ts) or t.ts < timestamptz '2000-01-01 00:00:00+00'
                 then 'timestamp out of range (' || t.ts::varchar || ' from ' || t.ts_origin || ')' end,
            case when t.ts < $earliest::timestamptz
                 then 'timestamp ' || t.ts::varchar || ' is before the first partition day ' || $earliest
                      || ' (set CACHEMETER_PARTITIONS_START earlier to keep it)' end,
            case when t.ts > $latest::timestamptz
                 then 'timestamp ' || t.ts::varchar || ' is in the future (after ' || $latest || ')' end,
            case when t.applied_convention = 'inclusive' and t.n_uncached < 0
                 then 'cache tokens exceed prompt: cache read ' || t.n_read || ' + cache write ' || (t.n_write_5m + t.n_write_1h)
                      || ' > prompt ' || t.n_prompt_reported || ' (no model can read and write more than its prompt)' end,
            case when t.applied_convention = 'additive' and t.n_uncached_reported is not null and t.n_prompt_reported is not null
                      and t.n_prompt <> t.n_prompt_reported
                 then 'input total ' || t.n_prompt_reported || ' does not equal uncached ' || t.n_uncached_reported
                      || ' + cache read ' || t.n_read || ' + cache write ' || (t.n_write_5m + t.n_write_1h) end,
            case when t.n_miss is not null and coalesce(t.n_hit, t.n_read) + t.n_miss <> t.n_prompt_reported
                 then 'cache hit + miss (' || coalesce(t.n_hit, t.n_read) || ' + ' || t.n_miss || ') does not equal prompt tokens '
                      || t.n_prompt_reported end,
            case when t.n_write_reported is not null
                      and not (coalesce(t.zero_write_beside_split, false) and t.n_write_reported = 0)
                      and (t.v_write_5m is not null or t.v_write_1h is not null or write_of_ttl(t.v_write_by_ttl, '1h') is not null)
                      and t.n_write_5m + t.n_write_1h <> t.n_write_reported
                 then 'cache write split 5m ' || t.n_write_5m || ' + 1h ' || t.n_write_1h
                      || ' does not equal the reported cache write count ' || t.n_write_reported end,
            case when t.total_is_sum and t.n_total is not null and t.n_total <> t.n_prompt + t.n_output
                      and t.n_total is distinct from t.n_prompt + t.n_output + t.unmapped_tokens  -- explained: flagged
                 then 'usage total ' || t.n_total || ' does not equal the sum of the usage keys read (' || (t.n_prompt + t.n_output)
                      || '): a key cachemeter does not price (audio, images) carries tokens' end,
            case when t.n_reasoning > t.n_output and not coalesce(t.reasoning_may_exceed_output, false)
                 then 'reasoning tokens ' || t.n_reasoning || ' exceed output tokens ' || t.n_output end
        ) as arithmetic_error
    from timed t
),
outcomes as materialized (
    select
        c.source_line,
        c.source_item,
        coalesce(c.batch_format, c.source_format || case when c.is_stream then '_stream' else '' end) as source_format,
        c.arithmetic_error as reason,
        c.item,
        c.b,  -- null but where the id is a hash of the body (stage 2, id_from_content)
        c.is_envelope,
        coalesce(
            nonblank(c.env_request_id), nonblank(c.body_id),
            case when c.span is not null then 'span-' || coalesce(c.span ->> '$.traceId', '') || '-' || coalesce(c.span ->> '$.spanId', '') end,
            case when c.id_from_content then 'bucket-' || md5(c.source_format || ':' || c.b::varchar)[1:20] end,
            c.batch_request_id
        ) as request_id,  -- null: the record carries none; staged_items__create.sql mints one from its file and line
        c.ts,
        c.provider,
        c.model_reported as model,
        coalesce(c.env_tenant, c.body_tenant, $tenant, 'default') as tenant,
        coalesce(c.env_app, c.body_app, $app, 'default') as app,
        -- a Batch API result or a usage bucket of batch traffic is billed as batch whatever tier its body names
        case when c.batch_format is not null or c.bucket_batch then 'batch' else c.body_tier end as service_tier,
        c.body_geo as inference_geo,
        c.body_speed as speed,
        c.prompt_cache_key,
        -- usage buckets stand for many requests (the Anthropic report gives no count: null = unknown)
        case c.request_count_from
            when 'field' then token_value(c.v_request_count)
            when 'field_or_one' then coalesce(token_value(c.v_request_count), 1)
            when 'unknown' then null
            else 1 end as request_count,
        -- OpenRouter BYOK: usage.cost is OpenRouter's fee; the provider bills the upstream cost to the user's own key
        -- xAI: usage.cost_in_usd_ticks is the billed USD in ticks of 10^-10 USD (exact: an integer times a decimal)
        coalesce(usd_of(c.env_cost), usd_of(c.v_cost)
            + case when c.is_byok then coalesce(usd_of(c.v_cost_upstream), 0) else 0 end,
            try_cast(try_cast(c.v_cost_ticks ->> '$' as decimal(38, 0)) * 0.0000000001 as decimal(38, 15))) as reported_cost_usd,
        -- long-context tiers are chosen per request: a bucket's summed prompt says nothing about its requests,
        -- so it is priced at the tier of its reported context window (Anthropic: "200k-1M" -> above 200,000)
        case c.tier_prompt_from
            when 'context_window' then case when c.context_window like '200k%' then 200001 when c.context_window like '1m%' then 1000001 else 0 end
            when 'zero' then 0
            else c.n_prompt
        end as tier_prompt_tokens,
        c.n_prompt, c.n_uncached, c.n_read, c.n_write_5m, c.n_write_1h, c.n_output, c.n_reasoning,
        c.hash_ids,
        token_value(c.v_trace_ms) as trace_offset_ms,
        c.latency_ms,
        c.ttft_ms,
        c.latency_issue,
        -- what the row's token classes may miss (never a reason: the row is kept and priced as counted)
        nullif(concat_ws('; ',
            write_split_issue(c.reports_write_split, token_value(c.v_write_5m), token_value(c.v_write_1h), c.n_write_reported),
            case when c.provider_unknown then 'provider ''' || c.named_provider || ''' is not a known provider: '
                || case when c.provider <> lower(trim(c.named_provider)) then 'counted under ' || c.provider
                        || ', the catalogue''s provider of model ' || c.model_reported
                        else 'kept unpriced (no catalogue provider for model ' || coalesce(c.model_reported, 'none') || ')' end
            end,
            case when c.unmapped_usage is not null then 'usage keys not mapped to a token class (not priced): '
                || array_to_string(list_transform(json_keys(c.unmapped_usage), lambda k: k || ' = ' || (c.unmapped_usage ->> k)), ', ')
            end), '') as usage_issue,
        c.unmapped_usage
    from checked c
    union all by name
    select source_line, source_item, coalesce(batch_format, source_format) as source_format, field_error as reason, item, is_envelope
    from validated_items
    where field_error is not null
),
excerpts as (
    -- privacy: an allow-list of metadata and usage objects, never request bodies or message contents; read for the
    -- rejected items only, from their body (stage 1) and their line (lines_in)
    select s.item, left(json_object(
        'ts', case when s.is_envelope then l.line -> '$.ts' end,
        'provider', case when s.is_envelope then l.line -> '$.provider' end,
        'model', coalesce(case when s.is_envelope then l.line -> '$.model' end, s.b -> '$.model', s.b -> '$.modelVersion'),
        'request_id', coalesce(case when s.is_envelope then l.line -> '$.request_id' end, s.b -> '$.id', l.line -> '$.custom_id'),
        'keys', json_keys(s.b),
        'usage', s.b -> '$.usage',
        'usageMetadata', s.b -> '$.usageMetadata',
        'usage_metadata', s.b -> '$.usage_metadata',
        'meta_info', s.b -> '$.meta_info',
        -- a provider's error message can echo the prompt: keep only its code and type
        'error', case when l.line like '%"error"%' then json_object(
            'code', coalesce(l.line -> '$.error.code', l.line -> '$.result.error.error.type'),
            'type', coalesce(l.line -> '$.error.type', l.line -> '$.result.error.type')) end,
        'trace', case when json_type(s.b, '$.hash_ids') = 'ARRAY' then json_object(
            'timestamp', s.b -> '$.timestamp', 'input_length', s.b -> '$.input_length',
            'output_length', s.b -> '$.output_length', 'blocks', json_array_length(s.b, '$.hash_ids')) end
    )::varchar, 2000) as raw_excerpt
    from shaped_items s
    join lines_in l on l.item = s.item
    where s.item in (select item from outcomes where reason is not null)
)
select
    o.source_line,
    o.source_format,
    o.reason,
    e.raw_excerpt,
    o.request_id, o.ts, o.provider, o.model, o.tenant, o.app, o.service_tier, o.inference_geo, o.speed,
    -- prefix family: explicit prompt_cache_key, else the trace's first two chained blocks, else the series
    case
        when o.reason is not null then null
        when o.prompt_cache_key is not null then 'key:' || md5(o.prompt_cache_key)[1:16]
        when o.hash_ids is not null then 'blk:' || md5(concat_ws(',', o.hash_ids ->> '$[0]', o.hash_ids ->> '$[1]'))[1:16]
        else 'series:' || md5(concat_ws('|', o.provider, o.model, o.tenant, o.app))[1:16]
    end as prefix_family,
    o.n_prompt as prompt_tokens,
    o.n_uncached as uncached_input_tokens,
    o.n_read as cache_read_tokens,
    o.n_write_5m as cache_write_5m_tokens,
    o.n_write_1h as cache_write_1h_tokens,
    o.n_output as output_tokens,
    o.n_reasoning as reasoning_tokens,
    o.hash_ids::varchar as hash_ids,
    o.trace_offset_ms,
    o.source_item,
    o.request_count,
    o.reported_cost_usd,
    o.tier_prompt_tokens,
    o.latency_ms,
    o.ttft_ms,
    o.latency_issue,
    o.usage_issue,
    o.unmapped_usage
from outcomes o
left join excerpts e on e.item = o.item
union all by name
-- lines that are not JSON: the Python reader adds length, hash and parse position afterwards
select source_line, source_item, null as source_format, 'malformed JSON' as reason from shaped_items where not is_json;
