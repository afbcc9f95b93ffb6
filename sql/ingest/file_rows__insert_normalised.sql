-- Normalise one chunk of raw records (temp table lines_in: source_line, line) into file_rows.
--
-- Each record is a raw provider response body or an envelope
--   {"ts", "provider"?, "model"?, "tenant"?, "app"?, "request_id"?, "request"?, "response": body}.
-- The adapter is chosen per record by the body's shape; the `formats` CTE is the field map of
-- every adapter (paths from reference/providers.md section 0 and the providers' SDK types):
--   inclusive formats report a prompt total that contains cache reads and writes
--   (uncached = total - read - write); additive formats report the uncached remainder beside them.
-- Parameters: $source_file, $provider, $model, $tenant, $app (source.yaml defaults, may be null),
--   $trace_start (ISO-8601 UTC text or null), $block_size (tokens per trace block),
--   $earliest (first partition day) and $latest (ISO-8601 UTC: later timestamps are "in the future").
-- A record is rejected (reason not null) for malformed JSON, an unknown shape or provider, a bad
-- or missing timestamp, invalid counts, or arithmetic that does not close. Nothing is clamped.
insert into file_rows
with
formats (source_format, inferred_provider, convention, prompt_path, tool_prompt_path, uncached_path,
         read_path, read_alt_path, miss_path, write_path, write_5m_path, write_1h_path,
         output_path, output_extra_path, reasoning_path, model_path, id_path, epoch_path, iso_path, tier_path) as (
    values
    ('openai_chat', 'openai', 'inclusive', '$.usage.prompt_tokens', null, null,
     '$.usage.prompt_tokens_details.cached_tokens', null, null, '$.usage.prompt_tokens_details.cache_write_tokens', null, null,
     '$.usage.completion_tokens', null, '$.usage.completion_tokens_details.reasoning_tokens', '$.model', '$.id', '$.created', null, '$.service_tier'),
    ('openai_responses', 'openai', 'inclusive', '$.usage.input_tokens', null, null,
     '$.usage.input_tokens_details.cached_tokens', null, null, '$.usage.input_tokens_details.cache_write_tokens', null, null,
     '$.usage.output_tokens', null, '$.usage.output_tokens_details.reasoning_tokens', '$.model', '$.id', '$.created_at', null, '$.service_tier'),
    -- DeepSeek: prompt_tokens = hit + miss; prefer the nested OpenAI-style field when a proxy adds it; no write fee
    ('deepseek_chat', 'deepseek', 'inclusive', '$.usage.prompt_tokens', null, null,
     '$.usage.prompt_tokens_details.cached_tokens', '$.usage.prompt_cache_hit_tokens', '$.usage.prompt_cache_miss_tokens', null, null, null,
     '$.usage.completion_tokens', null, '$.usage.completion_tokens_details.reasoning_tokens', '$.model', '$.id', '$.created', null, null),
    -- Anthropic: input_tokens is the uncached remainder; cache_creation holds the 5m / 1h split
    ('anthropic_messages', 'anthropic', 'additive', null, null, '$.usage.input_tokens',
     '$.usage.cache_read_input_tokens', null, null, '$.usage.cache_creation_input_tokens',
     '$.usage.cache_creation.ephemeral_5m_input_tokens', '$.usage.cache_creation.ephemeral_1h_input_tokens',
     '$.usage.output_tokens', null, '$.usage.output_tokens_details.thinking_tokens', '$.model', '$.id', null, null, '$.usage.service_tier'),
    -- Gemini / Vertex: promptTokenCount includes cachedContentTokenCount; thoughts are billed as output
    -- beside candidatesTokenCount; toolUsePromptTokenCount is extra prompt-side input
    ('gemini_generate_content', 'gemini', 'inclusive', '$.usageMetadata.promptTokenCount', '$.usageMetadata.toolUsePromptTokenCount', null,
     '$.usageMetadata.cachedContentTokenCount', null, null, null, null, null,
     '$.usageMetadata.candidatesTokenCount', '$.usageMetadata.thoughtsTokenCount', '$.usageMetadata.thoughtsTokenCount',
     '$.modelVersion', '$.responseId', null, '$.createTime', '$.usageMetadata.serviceTier'),
    -- Bedrock Converse: inputTokens excludes cache reads and writes; the body names no model
    ('bedrock_converse', 'bedrock', 'additive', null, null, '$.usage.inputTokens',
     '$.usage.cacheReadInputTokens', null, null, '$.usage.cacheWriteInputTokens', null, null,
     '$.usage.outputTokens', null, null, null, null, null, null, null),
    -- Mooncake block-hash trace: cache reads come from replaying hash_ids through a cache model
    ('mooncake_trace', 'self_hosted', 'trace', '$.input_length', null, null,
     null, null, null, null, null, null,
     '$.output_length', null, null, null, null, null, null, null)
),
provider_aliases (alias, provider) as (
    values ('openai', 'openai'), ('azure', 'azure'), ('azure_openai', 'azure'), ('anthropic', 'anthropic'),
           ('gemini', 'gemini'), ('google', 'gemini'), ('vertex', 'gemini'), ('vertex_ai', 'gemini'),
           ('bedrock', 'bedrock'), ('aws', 'bedrock'), ('deepseek', 'deepseek'),
           ('self_hosted', 'self_hosted'), ('self-hosted', 'self_hosted')
),
lines as (
    select source_line, line, json_valid(line) as is_json
    from lines_in
),
docs as (
    select source_line, line::json as j
    from lines
    where is_json
),
unwrapped as (
    select
        source_line,
        j,
        coalesce(json_type(j) = 'OBJECT' and json_type(j, '$.response') = 'OBJECT', false) as is_envelope
    from docs
),
envelope as (
    select
        source_line,
        j,
        is_envelope,
        case when is_envelope then j -> '$.response' else j end as b,
        case when is_envelope then j -> '$.ts' end as env_ts,
        case when is_envelope then lower(j ->> '$.provider') end as env_provider,
        case when is_envelope then j ->> '$.model' end as env_model,
        case when is_envelope then j ->> '$.tenant' end as env_tenant,
        case when is_envelope then j ->> '$.app' end as env_app,
        case when is_envelope then j ->> '$.request_id' end as env_request_id,
        -- explicit prefix key: OpenAI prompt_cache_key in the logged request, else a gateway's prefix hash
        case when is_envelope then coalesce(j ->> '$.request.prompt_cache_key', j ->> '$.prefix_hash') end as prompt_cache_key
    from unwrapped
),
shaped as (
    select
        e.*,
        coalesce(e.env_provider, lower($provider)) as declared_provider,
        case
            when json_type(b) <> 'OBJECT' then null
            when json_type(b, '$.hash_ids') = 'ARRAY' and json_type(b, '$.input_length') is not null then 'mooncake_trace'
            when json_type(b, '$.usageMetadata') = 'OBJECT' then 'gemini_generate_content'
            when json_type(b, '$.usage.inputTokens') is not null then 'bedrock_converse'
            when json_type(b, '$.usage.prompt_cache_hit_tokens') is not null then 'deepseek_chat'
            when json_type(b, '$.usage.prompt_tokens') is not null then 'openai_chat'
            when json_type(b, '$.usage.input_tokens') is null then null
            when b ->> '$.object' = 'response' or json_type(b, '$.usage.input_tokens_details') is not null then 'openai_responses'
            when b ->> '$.type' = 'message'
                or json_type(b, '$.usage.cache_read_input_tokens') is not null
                or json_type(b, '$.usage.cache_creation_input_tokens') is not null then 'anthropic_messages'
            when coalesce(e.env_provider, lower($provider)) = 'anthropic' then 'anthropic_messages'
            when coalesce(e.env_provider, lower($provider)) in ('openai', 'azure', 'azure_openai') then 'openai_responses'
        end as source_format
    from envelope e
),
extracted as (
    select
        s.source_line,
        s.j,
        s.b,
        s.is_envelope,
        s.env_ts,
        s.env_request_id,
        s.env_tenant,
        s.env_app,
        s.prompt_cache_key,
        s.source_format,
        f.convention,
        s.declared_provider,
        coalesce(pa.provider, case when s.declared_provider is null then f.inferred_provider end) as provider,
        coalesce(s.env_model, s.b ->> f.model_path, $model) as model,
        json_extract(s.b, f.prompt_path) as v_prompt,
        json_extract(s.b, f.tool_prompt_path) as v_tool_prompt,
        json_extract(s.b, f.uncached_path) as v_uncached,
        coalesce(json_extract(s.b, f.read_path), json_extract(s.b, f.read_alt_path)) as v_read,
        json_extract(s.b, f.read_alt_path) as v_read_alt,
        json_extract(s.b, f.miss_path) as v_miss,
        json_extract(s.b, f.write_path) as v_write,
        json_extract(s.b, f.write_5m_path) as v_write_5m,
        json_extract(s.b, f.write_1h_path) as v_write_1h,
        json_extract(s.b, f.output_path) as v_output,
        json_extract(s.b, f.output_extra_path) as v_output_extra,
        json_extract(s.b, f.reasoning_path) as v_reasoning,
        s.b ->> f.id_path as body_id,
        json_extract(s.b, f.epoch_path) as v_epoch,
        s.b ->> f.iso_path as body_iso,
        s.b ->> f.tier_path as service_tier,
        case when f.convention = 'trace' then s.b -> '$.timestamp' end as v_trace_ms,
        case when f.convention = 'trace' then s.b -> '$.hash_ids' end as hash_ids
    from shaped s
    left join formats f using (source_format)
    left join provider_aliases pa on pa.alias = s.declared_provider
),
validated as (
    select
        x.*,
        coalesce(
            case when json_type(x.j) <> 'OBJECT' then 'record is JSON ' || lower(json_type(x.j)) || ', not an object' end,
            case when x.source_format is null then 'unknown shape: no recognised usage object (top-level keys: '
                || coalesce(array_to_string(json_keys(x.b)[1:12], ', '), '') || ')' end,
            case when x.provider is null then 'unknown provider ''' || x.declared_provider
                || ''' (expected openai, azure, anthropic, gemini/google/vertex, bedrock/aws, deepseek, self_hosted)' end,
            case when x.convention in ('inclusive', 'trace') and x.v_prompt is null then 'missing prompt token count' end,
            case when x.convention = 'additive' and x.v_uncached is null then 'missing input token count' end,
            case when x.v_output is null and x.source_format <> 'gemini_generate_content' then 'missing output token count' end,
            token_error(x.v_prompt, 'prompt tokens'),
            token_error(x.v_tool_prompt, 'tool-use prompt tokens'),
            token_error(x.v_uncached, 'input tokens'),
            token_error(x.v_read, 'cache read tokens'),
            token_error(x.v_read_alt, 'cache hit tokens'),
            token_error(x.v_miss, 'cache miss tokens'),
            token_error(x.v_write, 'cache write tokens'),
            token_error(x.v_write_5m, 'cache write 5m tokens'),
            token_error(x.v_write_1h, 'cache write 1h tokens'),
            token_error(x.v_output, 'output tokens'),
            token_error(x.v_output_extra, 'thoughts tokens'),
            token_error(x.v_reasoning, 'reasoning tokens'),
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
    from extracted x
),
counted as (
    select
        v.*,
        token_value(v.v_prompt) + coalesce(token_value(v.v_tool_prompt), 0) as n_prompt_total,
        token_value(v.v_uncached) as n_uncached_reported,
        coalesce(token_value(v.v_read), 0) as n_read,
        token_value(v.v_miss) as n_miss,
        -- Anthropic: the 5m/1h split wins when present; older logs without it are all 5-minute writes
        case when v.v_write_5m is not null or v.v_write_1h is not null
             then coalesce(token_value(v.v_write_5m), 0) else coalesce(token_value(v.v_write), 0) end as n_write_5m,
        coalesce(token_value(v.v_write_1h), 0) as n_write_1h,
        token_value(v.v_write) as n_write_reported,
        coalesce(token_value(v.v_output), 0) + coalesce(token_value(v.v_output_extra), 0) as n_output,
        token_value(v.v_reasoning) as n_reasoning
    from validated v
    where v.field_error is null
),
classed as (
    select
        c.*,
        case when c.convention = 'additive' then c.n_uncached_reported
             when c.convention = 'inclusive' then c.n_prompt_total - c.n_read - c.n_write_5m - c.n_write_1h
        end as n_uncached,
        -- the whole prompt: reported for inclusive formats and traces, the sum of the classes for additive ones
        case when c.convention = 'additive' then c.n_uncached_reported + c.n_read + c.n_write_5m + c.n_write_1h
             else c.n_prompt_total
        end as n_prompt
    from counted c
),
timed as (
    select
        c.*,
        case
            when json_type(c.env_ts) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try(to_timestamp(c.env_ts::varchar::double))
            when json_type(c.env_ts) = 'VARCHAR' then try_cast(c.env_ts ->> '$' as timestamptz)
            when c.env_ts is not null then null
            when c.convention = 'trace' then try_cast($trace_start as timestamptz) + to_milliseconds(token_value(c.v_trace_ms))
            when json_type(c.v_epoch) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try(to_timestamp(c.v_epoch::varchar::double))
            when c.body_iso is not null then try_cast(c.body_iso as timestamptz)
        end as ts,
        case
            when c.env_ts is not null then 'envelope ts ' || left(c.env_ts::varchar, 40)
            when c.convention = 'trace' and $trace_start is null then 'trace record has a relative timestamp but source.yaml sets no trace_start'
            when c.convention = 'trace' then 'trace_start ' || $trace_start
            when c.v_epoch is not null then 'body time ' || left(c.v_epoch::varchar, 40)
            when c.body_iso is not null then 'body time ' || left(c.body_iso, 40)
        end as ts_origin
    from classed c
),
checked as (
    select
        t.*,
        coalesce(
            case when t.ts is null and t.ts_origin is null then 'no timestamp: add an envelope with "ts" (ISO-8601 or epoch seconds)' end,
            case when t.ts is null and t.convention = 'trace' and $trace_start is null then t.ts_origin end,
            case when t.ts is null then 'unparseable timestamp: ' || t.ts_origin end,
            case when not isfinite(t.ts) or t.ts < timestamptz '2000-01-01 00:00:00+00'
                 then 'timestamp out of range (' || t.ts::varchar || ' from ' || t.ts_origin || ')' end,
            case when t.ts < $earliest::timestamptz
                 then 'timestamp ' || t.ts::varchar || ' is before the first partition day ' || $earliest
                      || ' (set CACHEMETER_PARTITIONS_START earlier to keep it)' end,
            case when t.ts > $latest::timestamptz
                 then 'timestamp ' || t.ts::varchar || ' is in the future (after ' || $latest || ')' end,
            case when t.convention = 'inclusive' and t.n_uncached < 0
                 then 'cache tokens exceed prompt: cache read ' || t.n_read || ' + cache write ' || (t.n_write_5m + t.n_write_1h)
                      || ' > prompt ' || t.n_prompt_total end,
            case when t.n_miss is not null and t.n_read + t.n_miss <> t.n_prompt_total
                 then 'cache hit + miss (' || t.n_read || ' + ' || t.n_miss || ') does not equal prompt tokens ' || t.n_prompt_total end,
            case when t.n_write_reported is not null and (t.v_write_5m is not null or t.v_write_1h is not null)
                      and t.n_write_5m + t.n_write_1h <> t.n_write_reported
                 then 'cache write split 5m ' || t.n_write_5m || ' + 1h ' || t.n_write_1h
                      || ' does not equal cache_creation_input_tokens ' || t.n_write_reported end,
            case when t.n_reasoning > t.n_output and t.source_format <> 'gemini_generate_content'
                 then 'reasoning tokens ' || t.n_reasoning || ' exceed output tokens ' || t.n_output end
        ) as arithmetic_error
    from timed t
),
accepted as (
    select
        c.source_line,
        c.source_format,
        c.arithmetic_error as reason,
        c.b,
        c.j,
        c.is_envelope,
        coalesce(c.env_request_id, c.body_id, 'line-' || md5($source_file || ':' || c.source_line)[1:20]) as request_id,
        c.ts,
        c.provider,
        c.model,
        coalesce(c.env_tenant, $tenant, 'default') as tenant,
        coalesce(c.env_app, $app, 'default') as app,
        c.service_tier,
        c.prompt_cache_key,
        c.n_prompt,
        c.n_prompt_total,
        c.n_uncached,
        c.n_read,
        c.n_write_5m,
        c.n_write_1h,
        c.n_output,
        c.n_reasoning,
        c.hash_ids,
        token_value(c.v_trace_ms) as trace_offset_ms
    from checked c
),
rejected_fields as (
    select source_line, source_format, field_error as reason, b, j, is_envelope
    from validated
    where field_error is not null
),
outcomes as (
    select
        source_line, source_format, reason, b, j, is_envelope, request_id, ts, provider, model, tenant, app,
        service_tier, prompt_cache_key, n_prompt, n_uncached, n_read, n_write_5m, n_write_1h, n_output,
        n_reasoning, hash_ids, trace_offset_ms
    from accepted
    union all by name
    select source_line, source_format, reason, b, j, is_envelope from rejected_fields
),
final as (
    select
        o.source_line,
        o.source_format,
        o.reason,
        -- privacy: an allow-list of metadata and usage objects, never request bodies or message contents
        case when o.reason is not null then left(json_object(
            'ts', case when o.is_envelope then o.j -> '$.ts' end,
            'provider', case when o.is_envelope then o.j -> '$.provider' end,
            'model', coalesce(case when o.is_envelope then o.j -> '$.model' end, o.b -> '$.model', o.b -> '$.modelVersion'),
            'request_id', coalesce(case when o.is_envelope then o.j -> '$.request_id' end, o.b -> '$.id'),
            'keys', json_keys(o.b),
            'usage', o.b -> '$.usage',
            'usageMetadata', o.b -> '$.usageMetadata',
            'trace', case when json_type(o.b, '$.hash_ids') = 'ARRAY' then json_object(
                'timestamp', o.b -> '$.timestamp', 'input_length', o.b -> '$.input_length',
                'output_length', o.b -> '$.output_length', 'blocks', json_array_length(o.b, '$.hash_ids')) end
        )::varchar, 2000) end as raw_excerpt,
        o.request_id,
        o.ts,
        o.provider,
        o.model,
        o.tenant,
        o.app,
        o.service_tier,
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
        o.trace_offset_ms
    from outcomes o
)
select * from final
union all by name
-- lines that are not JSON: the Python reader adds length, hash and parse position afterwards
select source_line, null as source_format, 'malformed JSON' as reason from lines where not is_json;
