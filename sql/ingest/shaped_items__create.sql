-- General normaliser, stage 1 of 4: what each record is. Over one chunk of usage items (temp table lines_in:
-- source_line, source_item, item, line) into shaped_items, one row per item: its envelope keys, the batch it came
-- from, its shape (source_format, by the ladder of pipelines/ingest/formats.yaml `detection`, first match wins)
-- and the body the field paths are read from (b).
-- Regions between `-- <generated NAME>` and `-- </generated>` are written from pipelines/ingest/formats.yaml by
-- `python -m pipelines.ingest.format_sql` (drift-tested); the rest is hand-written.
--
-- Each item is a provider response body, an envelope around one
--   {"ts", "provider"?, "model"?, "tenant"?, "app"?, "request_id"?, "request"?, "response": body},
-- a batch result line, a usage-report result, a span, a gateway or tracing-tool row, or a canonical row
-- (containers and streams were split and folded by pipelines/ingest/containers.py). Each record is parsed
-- once for its envelope keys and once for the keys its shape is told by, both into named struct fields
-- (json_transform; an explicit JSON null reads as absent). is_json false: the line is not JSON.
-- The line text is not kept, only the body b that stage 2 reads (item numbers the chunk's rows: the last
-- stage reads a rejected item's line from lines_in by it, for the excerpt).
-- Parameters: $source_file (file name, or the batch marker), $provider (source.yaml default, may be null).
create or replace temp table shaped_items as
with
lines as (
    select
        source_line,
        source_item,
        item,
        line,
        try(json_transform(line, '{"custom_id":"JSON","result":"JSON","response":"JSON","error":"JSON","spend":"JSON","response_cost":"JSON","ts":"JSON","provider":"JSON","model":"JSON","tenant":"JSON","app":"JSON","request_id":"JSON","id":"JSON","reported_cost_usd":"JSON","request":{"prompt_cache_key":"JSON"},"prefix_hash":"JSON"}')) as env
    from lines_in
),
docs as (
    select
        source_line,
        source_item,
        item,
        line as j,
        -- json_transform gives no struct for invalid JSON and for a bare null
        env is not null or coalesce(try(json_valid(line)), false) as is_json,
        ltrim(line)[1] = '{' as is_object,
        env,
        -- a batch line's keys: its explicit nulls (response, error) say how a batch request failed
        case when env.custom_id is not null then json_keys(line) end as batch_keys
    from lines
),
unwrapped as (
    select
        d.*,
        case
            when not d.is_object or d.env.custom_id is null then null
            when json_type(d.env.result) = 'OBJECT' then 'anthropic_batch_result'
            when json_type(d.env.response) = 'OBJECT' or (d.env.response is null and list_contains(d.batch_keys, 'response'))
                 or list_contains(d.batch_keys, 'error') then 'openai_batch_output'
        end as batch_format,
        -- an envelope wraps a body in "response"; batch result lines and LiteLLM spend-log rows (whose
        -- "response" column is LiteLLM's copy of the body), and LiteLLM StandardLoggingPayload rows (response_cost
        -- beside its copy of the body) are read as themselves
        coalesce(d.is_object and json_type(d.env.response) = 'OBJECT' and d.env.custom_id is null and d.env.spend is null
                 and d.env.response_cost is null, false)
            as is_envelope
    from docs d
    where d.is_json
),
envelope as (
    select
        u.source_line,
        u.source_item,
        u.item,
        u.j,
        u.is_json,
        u.is_object,
        case when not u.is_object then lower(json_type(u.j)) end as json_kind,
        u.is_envelope,
        u.batch_format,
        case
            when u.batch_format = 'openai_batch_output' then u.env.response -> '$.body'
            when u.batch_format = 'anthropic_batch_result' then u.env.result -> '$.message'
            when u.is_envelope then u.env.response
            when u.is_object then u.j
        end as b0,
        case
            when u.batch_format = 'openai_batch_output' and (coalesce(u.env.response ->> '$.status_code', '') <> '200'
                                                             or u.env.error is not null)
                then 'batch request failed (status ' || coalesce(u.env.response ->> '$.status_code', 'none') || ', '
                    || coalesce(u.env.error ->> '$.code', u.env.response ->> '$.body.error.type', 'no error code') || '): not billed'
            when u.batch_format = 'anthropic_batch_result' and coalesce(u.env.result ->> '$.type', '') <> 'succeeded'
                then 'batch result ' || coalesce(u.env.result ->> '$.type', 'without a type') || ': not billed'
            when u.batch_format = 'anthropic_batch_result' and json_type(u.env.result, '$.message') is distinct from 'OBJECT'
                then 'batch result succeeded but carries no message object'
        end as batch_error,
        case when u.is_envelope then u.env.ts end as env_ts,
        case when u.is_envelope then lower(u.env.provider ->> '$') end as env_provider,
        case when u.is_envelope then u.env.model ->> '$' end as env_model,
        case when u.is_envelope then u.env.tenant ->> '$' end as env_tenant,
        case when u.is_envelope then u.env.app ->> '$' end as env_app,
        case when u.is_envelope then coalesce(nonblank(u.env.request_id ->> '$'), nonblank(u.env.id ->> '$')) end as env_request_id,
        -- a batch's custom_id is unique only within its batch: the fallback id is scoped to the file
        case when u.batch_format is not null then 'batch:' || $source_file || ':' || (u.env.custom_id ->> '$') end as batch_request_id,
        case when u.is_envelope then u.env.reported_cost_usd end as env_cost,
        -- explicit prefix key: OpenAI prompt_cache_key in the logged request, else a gateway's prefix hash
        case when u.is_envelope then coalesce(u.env.request.prompt_cache_key ->> '$', u.env.prefix_hash ->> '$') end as prompt_cache_key
    from unwrapped u
),
probed as (
    -- one parse of each body for every key the ladder reads
    select e.*, json_transform(e.b0,
        -- <generated probe_type: every key the ladder reads>
        '{"stream_error":"JSON","codex_token_count":"JSON","type":"JSON","message":{"usage":"JSON"},"hash_ids":"JSON","input_length":"JSON","usageMetadata":"JSON","otel_span":"JSON","span_attributes":"JSON","usage":{"inputTokens":"JSON","prompt_cache_hit_tokens":"JSON","billed_units":"JSON","promptTokens":"JSON","prompt_tokens":"JSON","input_tokens":"JSON","input_tokens_details":"JSON","cache_read_input_tokens":"JSON","cache_creation_input_tokens":"JSON"},"input":{"inputTokenCount":"JSON"},"meta_info":{"prompt_tokens":"JSON"},"spend":"JSON","response_cost":"JSON","usageDetails":"JSON","usage_details":"JSON","usage_metadata":"JSON","providerMetadata":{"anthropic":"JSON"},"num_model_requests":"JSON","object":"JSON","input_uncached_tokens":"JSON","uncached_input_tokens":"JSON","starting_at":"JSON","cache_read_input_tokens":"JSON","cache_creation":"JSON","x_groq":"JSON","_stream":"JSON"}'
        -- </generated>
    ) as k
    from envelope e
),
shaped as (
    select
        p.* exclude (k),
        coalesce(p.env_provider, lower($provider)) as declared_provider,
        case
            -- <generated ladder: pipelines/ingest/formats.yaml detection, in order>
            when k.stream_error is not null then 'stream'
            when json_type(k.codex_token_count) = 'OBJECT' then 'codex_rollout'
            when (k."type" ->> '$') = 'assistant' and json_type(k.message.usage) = 'OBJECT' then 'claude_code_transcript'
            when json_type(k.hash_ids) = 'ARRAY' and k.input_length is not null then 'mooncake_trace'
            when json_type(k.usageMetadata) = 'OBJECT' then 'gemini_generate_content'
            when json_present(k.otel_span -> '$.attributes."llm.token_count.prompt"') is not null or json_type(k.span_attributes) = 'OBJECT' then 'openinference_span'
            when json_type(k.otel_span) = 'OBJECT' then 'otel_genai_span'
            when k.usage.inputTokens is not null then 'bedrock_converse'
            when k."input".inputTokenCount is not null then 'bedrock_invocation_log'
            when k.usage.prompt_cache_hit_tokens is not null then 'deepseek_chat'
            when json_type(k.usage.billed_units) = 'OBJECT' then 'cohere_chat'
            when k.meta_info.prompt_tokens is not null then 'sglang_generate'
            when k.spend is not null or k.response_cost is not null then 'litellm_spend_log'
            when json_type(k.usageDetails) = 'OBJECT' or json_type(k.usage_details) = 'OBJECT' then 'langfuse_generation'
            when json_type(k.usage_metadata) = 'OBJECT' then 'langchain_usage_metadata'
            when k.usage.promptTokens is not null and json_type(k.providerMetadata.anthropic) = 'OBJECT' then 'ai_sdk_anthropic'
            when k.usage.promptTokens is not null then 'ai_sdk'
            when (k.num_model_requests is not null or (k.object ->> '$') = 'organization.usage.completions.result') and k.input_uncached_tokens is not null then 'openai_usage_bucket'
            when k.num_model_requests is not null or (k.object ->> '$') = 'organization.usage.completions.result' then 'openai_usage_bucket_pre_2026_07'
            when k.uncached_input_tokens is not null and (k.starting_at is not null or k.cache_read_input_tokens is not null or json_type(k.cache_creation) = 'OBJECT') then 'anthropic_usage_report'
            when k.uncached_input_tokens is not null then 'canonical'
            when json_type(k.x_groq) = 'OBJECT' and k.usage.prompt_tokens is not null then 'groq_chat'
            when k.usage.prompt_tokens is not null then 'openai_chat'
            when k.usage.input_tokens is null then null
            when (k.object ->> '$') = 'response' or k.usage.input_tokens_details is not null then 'openai_responses'
            when (k."type" ->> '$') = 'message' or k.usage.cache_read_input_tokens is not null or k.usage.cache_creation_input_tokens is not null then 'anthropic_messages'
            when p.batch_format = 'anthropic_batch_result' then 'anthropic_messages'
            when coalesce(p.env_provider, lower($provider)) in ('anthropic') then 'anthropic_messages'
            when coalesce(p.env_provider, lower($provider)) in ('openai', 'azure', 'azure_openai') then 'openai_responses'
            -- </generated>
        end as source_format,
        json_type(k._stream) = 'BOOLEAN' as is_stream
    from probed p
),
bodies as (
    -- the object the field paths are read from (pipelines/ingest/formats.yaml `body`: span attributes, an object
    -- built of the body's keys, a member stored as JSON text parsed); else the body itself
    select
        s.* exclude (b0, j),
        case when s.source_format = 'stream' then s.b0 ->> '$.stream_error' end as b0_stream_error,
        -- <generated bodies: each format's body declaration>
        case
            when s.source_format = 'otel_genai_span' then s.b0 -> '$.otel_span.attributes'
            when s.source_format = 'openinference_span' then coalesce(s.b0 -> '$.otel_span.attributes', s.b0 -> '$.span_attributes')
            when s.source_format = 'litellm_spend_log' and json_type(s.b0, '$.metadata') = 'VARCHAR' and json_valid(s.b0 ->> '$.metadata')
                then json_merge_patch(s.b0, json_object('metadata', (s.b0 ->> '$.metadata')::json))
            when s.source_format = 'langfuse_generation' then json_object(
                    'u', coalesce(s.b0 -> '$.usageDetails', s.b0 -> '$.usage_details'),
                    'c', coalesce(s.b0 -> '$.costDetails', s.b0 -> '$.cost_details'),
                    'model', s.b0 -> '$.model',
                    'id', s.b0 -> '$.id',
                    'start', coalesce(s.b0 -> '$.startTime', s.b0 -> '$.start_time'),
                    'end', coalesce(s.b0 -> '$.endTime', s.b0 -> '$.end_time'),
                    'completion_start', coalesce(s.b0 -> '$.completionStartTime', s.b0 -> '$.completion_start_time'),
                    'latency', s.b0 -> '$.latency',
                    'time_to_first_token', coalesce(s.b0 -> '$.timeToFirstToken', s.b0 -> '$.time_to_first_token'),
                    'calculatedTotalCost', coalesce(s.b0 -> '$.calculatedTotalCost', s.b0 -> '$.calculated_total_cost'),
                    'totalCost', coalesce(s.b0 -> '$.totalCost', s.b0 -> '$.total_cost'),
                    'keys', json_keys(s.b0))
            else s.b0
        end as b,
        case when s.source_format in ('otel_genai_span', 'openinference_span') then s.b0 -> '$.otel_span' end as span,
        case
            when s.source_format = 'anthropic_usage_report' and json_type(s.b0, '$.cache_creation') not in ('OBJECT', 'NULL')
                then 'cache_creation is not an object'
            when s.source_format = 'litellm_spend_log' and json_type(s.b0, '$.metadata') = 'VARCHAR' and not json_valid(s.b0 ->> '$.metadata')
                then 'LiteLLM metadata is text that is not valid JSON (its usage_object cannot be read)'
        end as structure_error
        -- </generated>
    from shaped s
)
select * from bodies
union all by name
-- lines that are not JSON (is_json false): quarantined as malformed by the last stage
select source_line, source_item, item, false as is_json from docs where not is_json;
