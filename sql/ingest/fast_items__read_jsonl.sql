-- Fast lane: normalise the common records of one JSONL file, plain or gzip ($path), straight from DuckDB's parallel
-- JSON reader into fast_items (accepted = true); every other line is deferred to the general normaliser. Regions
-- `-- <generated NAME>` .. `-- </generated>` come from pipelines/ingest/formats.yaml (`make formats`, drift-tested).
-- A line takes the lane only when the general normaliser would accept it with the same values (tests/sql/test_fast_lane.py):
-- an envelope {"ts", "provider"?, "model"?, "tenant"?, "app"?, "request_id"?, "prefix_hash"?, "request"?, "response":
-- body} of a fast_lane format (the general ladder, in order), counts plain integers in [0, 10^12), texts plain strings,
-- the time in range, the arithmetic closing, no key its format does not declare (at any declared depth) and no
-- documented unpriced key above zero (the general walk, unmapped_usage__create.sql, reports them); else deferred, never
-- rejected. One row per non-blank line (malformed: nulls), in order (rowid + 1 = its line when none is blank). A
-- logged request body is read for its prompt_cache_key only; has_request marks its line, read again by stage.py for
-- its fingerprint (never stored). Parameters: $path (globs escaped: discover.duckdb_literal_path), $provider, $model,
-- $tenant, $app, $default_ts, $deployment_names, $deployment_models, $earliest, $latest.
create or replace temp table fast_items as
with
raw as (
    select *
    from read_json($path, format = 'newline_delimited', ignore_errors = true, columns = {
        ts: 'JSON', provider: 'JSON', model: 'JSON', tenant: 'JSON', app: 'JSON', request_id: 'JSON', id: 'JSON',
        prefix_hash: 'JSON', reported_cost_usd: 'JSON', custom_id: 'JSON', spend: 'JSON', response_cost: 'JSON',
        request: 'STRUCT(prompt_cache_key JSON)',  -- then the keys of a container or a stream (ingest/containers.py)
        resourceSpans: 'JSON', object: 'JSON', data: 'JSON', starting_at: 'JSON', results: 'JSON',
        stream_events: 'JSON', response_sse: 'JSON', meta: 'JSON', has_more: 'JSON', next_page: 'JSON',
        -- <generated response_struct: the body's keys the ladder and the fast-lane formats read>
        response: 'STRUCT(
            usage JSON, model JSON, id JSON, created JSON, service_tier JSON, provider JSON, created_at JSON,
            usageMetadata JSON, modelVersion JSON, responseId JSON, createTime JSON,
            metrics STRUCT(
                latencyMs JSON),
            x_groq JSON, object JSON, "type" JSON, _stream JSON, stream_error JSON, codex_token_count JSON,
            message JSON, hash_ids JSON, input_length JSON, otel_span JSON, span_attributes JSON, "input" JSON,
            meta_info JSON, spend JSON, response_cost JSON, usageDetails JSON, usage_details JSON,
            usage_metadata JSON, providerMetadata JSON, num_model_requests JSON, input_uncached_tokens JSON,
            uncached_input_tokens JSON, starting_at JSON, cache_read_input_tokens JSON, cache_creation JSON)'
        -- </generated>
    })
),
src as (
    -- each usage object read as JSON above, typed here as the struct the picks read (a column of its own: no copy of the body)
    select
        -- <generated usage_typed>
        r.*,
        r.response.usage as u_usage,
        r.response.usageMetadata as u_usageMetadata,
        (r.response.usage is null or r.t_usage is not null) and (r.response.usageMetadata is null or r.t_usageMetadata is not null) as usage_typed
        from (select r.*, json_transform(r.response.usage, '{"prompt_tokens":"JSON","total_tokens":"JSON","prompt_tokens_details":{"cached_tokens":"JSON","cache_write_tokens":"JSON","cache_creation_tokens":"JSON","cache_creation_input_tokens":"JSON","cache_creation":{"ephemeral_5m_input_tokens":"JSON"},"audio_tokens":"JSON","image_tokens":"JSON","text_tokens":"JSON"},"cache_read_input_tokens":"JSON","cached_tokens":"JSON","cache_creation_input_tokens":"JSON","completion_tokens":"JSON","completion_tokens_details":{"reasoning_tokens":"JSON","audio_tokens":"JSON","text_tokens":"JSON","accepted_prediction_tokens":"JSON","rejected_prediction_tokens":"JSON"},"cost":"JSON","cost_details":{"upstream_inference_cost":"JSON","upstream_inference_prompt_cost":"JSON","upstream_inference_completions_cost":"JSON"},"is_byok":"JSON","cost_in_usd_ticks":"JSON","num_sources_used":"JSON","citation_tokens":"JSON","num_search_queries":"JSON","reasoning_tokens":"JSON","input_tokens":"JSON","input_tokens_details":{"cached_tokens":"JSON","cache_write_tokens":"JSON"},"output_tokens":"JSON","output_tokens_details":{"reasoning_tokens":"JSON","thinking_tokens":"JSON"},"cache_creation":{"ephemeral_5m_input_tokens":"JSON","ephemeral_1h_input_tokens":"JSON"},"service_tier":"JSON","inference_geo":"JSON","speed":"JSON","server_tool_use":{"web_search_requests":"JSON"},"inputTokens":"JSON","cacheReadInputTokens":"JSON","cacheWriteInputTokens":"JSON","cacheDetails":"JSON","outputTokens":"JSON","queue_time":"JSON","prompt_time":"JSON","completion_time":"JSON","total_time":"JSON","totalTokens":"JSON","cacheReadInputTokenCount":"JSON","cacheWriteInputTokenCount":"JSON","prompt_cache_hit_tokens":"JSON","billed_units":"JSON","promptTokens":"JSON"}') as t_usage, json_transform(r.response.usageMetadata, '{"promptTokenCount":"JSON","toolUsePromptTokenCount":"JSON","cachedContentTokenCount":"JSON","candidatesTokenCount":"JSON","thoughtsTokenCount":"JSON","serviceTier":"JSON","responseTokenCount":"JSON","totalTokenCount":"JSON","promptTokensDetails":"JSON","cacheTokensDetails":"JSON","candidatesTokensDetails":"JSON","toolUsePromptTokensDetails":"JSON"}') as t_usageMetadata from raw r) r
        -- </generated>
),
shaped as (
    select
        s.*,
        coalesce(lower(plain_json_text(s.provider)), lower($provider)) as declared_provider,
        -- the general normaliser's ladder in its order; null = defer
        case
            when s.response is null or s.custom_id is not null or s.spend is not null or s.response_cost is not null
                 or coalesce(s.resourceSpans, s.object, s.data, s.starting_at, s.results, s.stream_events,
                             s.response_sse, s.meta, s.has_more, s.next_page) is not null then null
            when s.response._stream is not null or not s.usage_typed then null
            -- <generated ladder: the general ladder; a rung of another format defers the line>
            when s.response.stream_error is not null
                 or s.response.codex_token_count is not null
                 or contains(coalesce(s.response."type"::varchar, '') || coalesce(s.response.object::varchar, ''), '\')
                 or (s.response."type" = '"assistant"' and s.response.message is not null)
                 or (s.response.hash_ids is not null and s.response.input_length is not null) then null
            when s.t_usageMetadata is not null then 'gemini_generate_content'
            when (s.response.otel_span is not null or s.response.span_attributes is not null)
                 or s.response.otel_span is not null then null
            when s.t_usage.inputTokens is not null then 'bedrock_converse'
            when s.response."input" is not null
                 or s.t_usage.prompt_cache_hit_tokens is not null
                 or s.t_usage.billed_units is not null
                 or s.response.meta_info is not null
                 or (s.response.spend is not null or s.response.response_cost is not null)
                 or (s.response.usageDetails is not null or s.response.usage_details is not null)
                 or s.response.usage_metadata is not null
                 or (s.t_usage.promptTokens is not null and s.response.providerMetadata is not null)
                 or s.t_usage.promptTokens is not null
                 or ((s.response.num_model_requests is not null or s.response.object = '"organization.usage.completions.result"') and s.response.input_uncached_tokens is not null)
                 or (s.response.num_model_requests is not null or s.response.object = '"organization.usage.completions.result"')
                 or (s.response.uncached_input_tokens is not null and (s.response.starting_at is not null or s.response.cache_read_input_tokens is not null or s.response.cache_creation is not null))
                 or s.response.uncached_input_tokens is not null then null
            when json_type(s.response.x_groq) = 'OBJECT' and s.t_usage.prompt_tokens is not null then 'groq_chat'
            when s.t_usage.prompt_tokens is not null then 'openai_chat'
            when s.t_usage.input_tokens is null then null
            when s.response.object = '"response"' or s.t_usage.input_tokens_details is not null then 'openai_responses'
            when s.response."type" = '"message"' or s.t_usage.cache_read_input_tokens is not null or s.t_usage.cache_creation_input_tokens is not null then 'anthropic_messages'
            when coalesce(lower(plain_json_text(s.provider)), lower($provider)) in ('anthropic') then 'anthropic_messages'
            when coalesce(lower(plain_json_text(s.provider)), lower($provider)) in ('openai', 'azure', 'azure_openai') then 'openai_responses'
            -- </generated>
        end as source_format
    from src s
),
keyed as (
    -- each usage object's declared objects' keys, listed only where it may hold an undeclared key (format_sql.lane_usage_keys)
    select
        s.*,
        -- <generated usage_keys>
        case when contains(s.u_usage::varchar, '[') or strlen(s.u_usage::varchar) <> case s.source_format when 'openai_chat' then greatest(coalesce(strlen(s.t_usage.prompt_tokens::varchar) + 17, 0) + coalesce(strlen(s.t_usage.total_tokens::varchar) + 16, 0) + case when s.t_usage.prompt_tokens_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.prompt_tokens_details.cached_tokens::varchar) + 17, 0) + coalesce(strlen(s.t_usage.prompt_tokens_details.cache_write_tokens::varchar) + 22, 0) + coalesce(strlen(s.t_usage.prompt_tokens_details.cache_creation_tokens::varchar) + 25, 0) + coalesce(strlen(s.t_usage.prompt_tokens_details.cache_creation_input_tokens::varchar) + 31, 0) + case when s.t_usage.prompt_tokens_details.cache_creation is not null then coalesce(nullif(coalesce(strlen(s.t_usage.prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens::varchar) + 29, 0), 0) + 1, -1) + 18 else 0 end + coalesce(case when not starts_with(s.t_usage.prompt_tokens_details.text_tokens::varchar, '{') then strlen(s.t_usage.prompt_tokens_details.text_tokens::varchar) end + 15, 0) + coalesce(strlen(s.t_usage.prompt_tokens_details.audio_tokens::varchar) + 16, 0) + coalesce(strlen(s.t_usage.prompt_tokens_details.image_tokens::varchar) + 16, 0), 0) + 1, -1) + 25 else 0 end + coalesce(strlen(s.t_usage.cache_read_input_tokens::varchar) + 27, 0) + coalesce(strlen(s.t_usage.cached_tokens::varchar) + 17, 0) + coalesce(strlen(s.t_usage.cache_creation_input_tokens::varchar) + 31, 0) + coalesce(strlen(s.t_usage.completion_tokens::varchar) + 21, 0) + case when s.t_usage.completion_tokens_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.completion_tokens_details.reasoning_tokens::varchar) + 20, 0) + coalesce(case when not starts_with(s.t_usage.completion_tokens_details.text_tokens::varchar, '{') then strlen(s.t_usage.completion_tokens_details.text_tokens::varchar) end + 15, 0) + coalesce(case when not starts_with(s.t_usage.completion_tokens_details.accepted_prediction_tokens::varchar, '{') then strlen(s.t_usage.completion_tokens_details.accepted_prediction_tokens::varchar) end + 30, 0) + coalesce(case when not starts_with(s.t_usage.completion_tokens_details.rejected_prediction_tokens::varchar, '{') then strlen(s.t_usage.completion_tokens_details.rejected_prediction_tokens::varchar) end + 30, 0) + coalesce(strlen(s.t_usage.completion_tokens_details.audio_tokens::varchar) + 16, 0), 0) + 1, -1) + 29 else 0 end + coalesce(strlen(s.t_usage.cost::varchar) + 8, 0) + case when s.t_usage.cost_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.cost_details.upstream_inference_cost::varchar) + 27, 0) + coalesce(case when not starts_with(s.t_usage.cost_details.upstream_inference_prompt_cost::varchar, '{') then strlen(s.t_usage.cost_details.upstream_inference_prompt_cost::varchar) end + 34, 0) + coalesce(case when not starts_with(s.t_usage.cost_details.upstream_inference_completions_cost::varchar, '{') then strlen(s.t_usage.cost_details.upstream_inference_completions_cost::varchar) end + 39, 0), 0) + 1, -1) + 16 else 0 end + coalesce(strlen(s.t_usage.is_byok::varchar) + 11, 0) + coalesce(strlen(s.t_usage.cost_in_usd_ticks::varchar) + 21, 0) + coalesce(strlen(s.t_usage.num_sources_used::varchar) + 20, 0) + coalesce(strlen(s.t_usage.citation_tokens::varchar) + 19, 0) + coalesce(strlen(s.t_usage.num_search_queries::varchar) + 22, 0) + coalesce(strlen(s.t_usage.reasoning_tokens::varchar) + 20, 0) + 1, 2) when 'groq_chat' then greatest(coalesce(strlen(s.t_usage.prompt_tokens::varchar) + 17, 0) + case when s.t_usage.prompt_tokens_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.prompt_tokens_details.cached_tokens::varchar) + 17, 0), 0) + 1, -1) + 25 else 0 end + coalesce(strlen(s.t_usage.completion_tokens::varchar) + 21, 0) + coalesce(case when not starts_with(s.t_usage.total_tokens::varchar, '{') then strlen(s.t_usage.total_tokens::varchar) end + 16, 0) + coalesce(case when not starts_with(s.t_usage.queue_time::varchar, '{') then strlen(s.t_usage.queue_time::varchar) end + 14, 0) + coalesce(case when not starts_with(s.t_usage.prompt_time::varchar, '{') then strlen(s.t_usage.prompt_time::varchar) end + 15, 0) + coalesce(case when not starts_with(s.t_usage.completion_time::varchar, '{') then strlen(s.t_usage.completion_time::varchar) end + 19, 0) + coalesce(case when not starts_with(s.t_usage.total_time::varchar, '{') then strlen(s.t_usage.total_time::varchar) end + 14, 0) + 1, 2) when 'openai_responses' then greatest(coalesce(strlen(s.t_usage.input_tokens::varchar) + 16, 0) + case when s.t_usage.input_tokens_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.input_tokens_details.cached_tokens::varchar) + 17, 0) + coalesce(strlen(s.t_usage.input_tokens_details.cache_write_tokens::varchar) + 22, 0), 0) + 1, -1) + 24 else 0 end + coalesce(strlen(s.t_usage.output_tokens::varchar) + 17, 0) + case when s.t_usage.output_tokens_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.output_tokens_details.reasoning_tokens::varchar) + 20, 0), 0) + 1, -1) + 25 else 0 end + coalesce(strlen(s.t_usage.cost::varchar) + 8, 0) + coalesce(strlen(s.t_usage.cost_in_usd_ticks::varchar) + 21, 0) + coalesce(case when not starts_with(s.t_usage.total_tokens::varchar, '{') then strlen(s.t_usage.total_tokens::varchar) end + 16, 0) + 1, 2) when 'anthropic_messages' then greatest(coalesce(strlen(s.t_usage.input_tokens::varchar) + 16, 0) + coalesce(strlen(s.t_usage.cache_read_input_tokens::varchar) + 27, 0) + coalesce(strlen(s.t_usage.cache_creation_input_tokens::varchar) + 31, 0) + case when s.t_usage.cache_creation is not null then coalesce(nullif(coalesce(strlen(s.t_usage.cache_creation.ephemeral_5m_input_tokens::varchar) + 29, 0) + coalesce(strlen(s.t_usage.cache_creation.ephemeral_1h_input_tokens::varchar) + 29, 0), 0) + 1, -1) + 18 else 0 end + coalesce(strlen(s.t_usage.output_tokens::varchar) + 17, 0) + case when s.t_usage.output_tokens_details is not null then coalesce(nullif(coalesce(strlen(s.t_usage.output_tokens_details.thinking_tokens::varchar) + 19, 0), 0) + 1, -1) + 25 else 0 end + coalesce(strlen(s.t_usage.service_tier::varchar) + 16, 0) + coalesce(strlen(s.t_usage.inference_geo::varchar) + 17, 0) + coalesce(strlen(s.t_usage.speed::varchar) + 9, 0) + case when s.t_usage.server_tool_use is not null then coalesce(nullif(coalesce(strlen(s.t_usage.server_tool_use.web_search_requests::varchar) + 23, 0), 0) + 1, -1) + 19 else 0 end + 1, 2) when 'bedrock_converse' then greatest(coalesce(strlen(s.t_usage.inputTokens::varchar) + 15, 0) + coalesce(strlen(s.t_usage.cacheReadInputTokens::varchar) + 24, 0) + coalesce(strlen(s.t_usage.cacheWriteInputTokens::varchar) + 25, 0) + coalesce(strlen(s.t_usage.cacheDetails::varchar) + 16, 0) + coalesce(strlen(s.t_usage.cacheDetails::varchar) + 16, 0) + coalesce(strlen(s.t_usage.outputTokens::varchar) + 16, 0) + coalesce(case when not starts_with(s.t_usage.totalTokens::varchar, '{') then strlen(s.t_usage.totalTokens::varchar) end + 15, 0) + coalesce(case when not starts_with(s.t_usage.cacheReadInputTokenCount::varchar, '{') then strlen(s.t_usage.cacheReadInputTokenCount::varchar) end + 28, 0) + coalesce(case when not starts_with(s.t_usage.cacheWriteInputTokenCount::varchar, '{') then strlen(s.t_usage.cacheWriteInputTokenCount::varchar) end + 29, 0) + 1, 2) end
            then json_keys(s.u_usage, ['$', '$.prompt_tokens_details', '$.prompt_tokens_details.cache_creation', '$.completion_tokens_details', '$.cost', '$.cost_details', '$.input_tokens_details', '$.output_tokens_details', '$.cache_creation', '$.server_tool_use']) end as k_usage,
        case when contains(s.u_usageMetadata::varchar, '[') or strlen(s.u_usageMetadata::varchar) <> case s.source_format when 'gemini_generate_content' then greatest(coalesce(strlen(s.t_usageMetadata.promptTokenCount::varchar) + 20, 0) + coalesce(strlen(s.t_usageMetadata.toolUsePromptTokenCount::varchar) + 27, 0) + coalesce(strlen(s.t_usageMetadata.cachedContentTokenCount::varchar) + 27, 0) + coalesce(strlen(s.t_usageMetadata.candidatesTokenCount::varchar) + 24, 0) + coalesce(strlen(s.t_usageMetadata.thoughtsTokenCount::varchar) + 22, 0) + coalesce(strlen(s.t_usageMetadata.serviceTier::varchar) + 15, 0) + coalesce(case when not starts_with(s.t_usageMetadata.totalTokenCount::varchar, '{') then strlen(s.t_usageMetadata.totalTokenCount::varchar) end + 19, 0) + coalesce(strlen(s.t_usageMetadata.promptTokensDetails::varchar) + 23, 0) + coalesce(strlen(s.t_usageMetadata.cacheTokensDetails::varchar) + 22, 0) + coalesce(strlen(s.t_usageMetadata.candidatesTokensDetails::varchar) + 27, 0) + coalesce(strlen(s.t_usageMetadata.toolUsePromptTokensDetails::varchar) + 30, 0) + coalesce(strlen(s.t_usageMetadata.responseTokenCount::varchar) + 22, 0) + 1, 2) end
            then json_keys(s.u_usageMetadata, ['$']) end as k_usageMetadata
        -- </generated>
    from shaped s
),
picked as (
    -- each field's raw JSON value where the declaration reads it for this format
    select
        s.source_format, s.declared_provider, s.ts as env_ts, s.model as env_model, s.tenant as env_tenant,
        s.app as env_app, s.request_id as env_request_id, s.id as env_id, s.prefix_hash, s.reported_cost_usd,
        s.request.prompt_cache_key, s.request is not null as has_request,
        s.provider is not null and plain_json_text(s.provider) is null as bad_provider,
        -- <generated picked: each field's alternatives, then the format's convention and options>
        case when s.source_format in ('openai_chat', 'groq_chat') then s.t_usage.prompt_tokens when s.source_format = 'openai_responses' then s.t_usage.input_tokens when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.promptTokenCount end as v_prompt,
        case when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.toolUsePromptTokenCount end as v_extra_prompt,
        case when s.source_format = 'anthropic_messages' then s.t_usage.input_tokens when s.source_format = 'bedrock_converse' then s.t_usage.inputTokens end as v_uncached,
        case when s.source_format = 'openai_chat' then coalesce(s.t_usage.prompt_tokens_details.cached_tokens, s.t_usage.cache_read_input_tokens, s.t_usage.cached_tokens) when s.source_format = 'groq_chat' then s.t_usage.prompt_tokens_details.cached_tokens when s.source_format = 'openai_responses' then s.t_usage.input_tokens_details.cached_tokens when s.source_format = 'anthropic_messages' then s.t_usage.cache_read_input_tokens when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.cachedContentTokenCount when s.source_format = 'bedrock_converse' then s.t_usage.cacheReadInputTokens end as v_read,
        case when s.source_format = 'openai_chat' then coalesce(s.t_usage.prompt_tokens_details.cache_write_tokens, s.t_usage.cache_creation_input_tokens, s.t_usage.prompt_tokens_details.cache_creation_tokens, s.t_usage.prompt_tokens_details.cache_creation_input_tokens) when s.source_format = 'openai_responses' then s.t_usage.input_tokens_details.cache_write_tokens when s.source_format = 'anthropic_messages' then s.t_usage.cache_creation_input_tokens when s.source_format = 'bedrock_converse' then s.t_usage.cacheWriteInputTokens end as v_write,
        case when s.source_format = 'openai_chat' then s.t_usage.prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens when s.source_format = 'anthropic_messages' then s.t_usage.cache_creation.ephemeral_5m_input_tokens end as v_write_5m,
        case when s.source_format = 'anthropic_messages' then s.t_usage.cache_creation.ephemeral_1h_input_tokens end as v_write_1h,
        case when s.source_format in ('openai_chat', 'groq_chat') then s.t_usage.completion_tokens when s.source_format in ('openai_responses', 'anthropic_messages') then s.t_usage.output_tokens when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.candidatesTokenCount when s.source_format = 'bedrock_converse' then s.t_usage.outputTokens end as v_output,
        case when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.thoughtsTokenCount end as v_output_extra,
        case when s.source_format = 'openai_chat' then s.t_usage.completion_tokens_details.reasoning_tokens when s.source_format = 'openai_responses' then s.t_usage.output_tokens_details.reasoning_tokens when s.source_format = 'anthropic_messages' then s.t_usage.output_tokens_details.thinking_tokens when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.thoughtsTokenCount end as v_reasoning,
        case when s.source_format = 'openai_chat' then s.t_usage.total_tokens end as v_total,
        case when s.source_format in ('openai_chat', 'groq_chat', 'openai_responses', 'anthropic_messages') then s.response.model when s.source_format = 'gemini_generate_content' then coalesce(s.response.modelVersion, s.response.model) end as v_model,
        case when s.source_format in ('openai_chat', 'groq_chat', 'openai_responses', 'anthropic_messages') then s.response.id when s.source_format = 'gemini_generate_content' then s.response.responseId end as v_id,
        case when s.source_format = 'gemini_generate_content' then s.response.createTime end as v_iso,
        case when s.source_format in ('openai_chat', 'openai_responses') then s.response.service_tier when s.source_format = 'anthropic_messages' then s.t_usage.service_tier when s.source_format = 'gemini_generate_content' then s.t_usageMetadata.serviceTier end as v_tier,
        case when s.source_format = 'anthropic_messages' then s.t_usage.inference_geo end as v_geo,
        case when s.source_format = 'anthropic_messages' then s.t_usage.speed end as v_speed,
        case when s.source_format in ('openai_chat', 'groq_chat') then s.response.created when s.source_format = 'openai_responses' then s.response.created_at end as v_epoch,
        case when s.source_format = 'bedrock_converse' then s.response.metrics.latencyMs end as v_latency_ms,
        case when s.source_format = 'openai_chat' then s.response.provider end as body_upstream,
        coalesce(case s.source_format when 'openai_chat' then json_present(s.t_usage.cost -> '$.total_cost') is not null or s.t_usage.cost is not null or s.t_usage.cost_details.upstream_inference_cost is not null or s.t_usage.is_byok is not null or s.t_usage.cost_in_usd_ticks is not null or s.t_usage.prompt_tokens_details.audio_tokens <> '0' or s.t_usage.prompt_tokens_details.image_tokens <> '0' or s.t_usage.completion_tokens_details.audio_tokens <> '0' or s.t_usage.num_sources_used <> '0' or s.t_usage.citation_tokens <> '0' or s.t_usage.num_search_queries <> '0' or s.t_usage.reasoning_tokens <> '0' when 'openai_responses' then s.t_usage.cost is not null or s.t_usage.cost_in_usd_ticks is not null when 'anthropic_messages' then s.t_usage.server_tool_use.web_search_requests <> '0' when 'gemini_generate_content' then s.t_usageMetadata.responseTokenCount <> '0' or contains(s.t_usageMetadata.promptTokensDetails::varchar, '"AUDIO"') or contains(s.t_usageMetadata.promptTokensDetails::varchar, '\') or contains(s.t_usageMetadata.cacheTokensDetails::varchar, '"AUDIO"') or contains(s.t_usageMetadata.cacheTokensDetails::varchar, '\') or contains(s.t_usageMetadata.candidatesTokensDetails::varchar, '"AUDIO"') or contains(s.t_usageMetadata.candidatesTokensDetails::varchar, '\') or contains(s.t_usageMetadata.toolUsePromptTokensDetails::varchar, '"AUDIO"') or contains(s.t_usageMetadata.toolUsePromptTokensDetails::varchar, '\') when 'bedrock_converse' then s.t_usage.cacheDetails is not null end, false) as unsupported,
        case when s.source_format in ('groq_chat') then 'groq' when s.source_format in ('openai_responses') then 'openai' when s.source_format in ('anthropic_messages') then 'anthropic' when s.source_format in ('gemini_generate_content') then 'gemini' when s.source_format in ('bedrock_converse') then 'bedrock' end as inferred_provider,
        case when s.source_format in ('openai_chat') then 'openai' end as default_provider,
        s.source_format in ('anthropic_messages', 'bedrock_converse') as additive,
        s.source_format in ('gemini_generate_content') as output_optional,
        s.source_format in ('gemini_generate_content') as reasoning_may_exceed_output,
        s.source_format in ('anthropic_messages') as reports_write_split,
        coalesce(case s.source_format when 'openai_chat' then case when s.k_usage is not null then coalesce(len(s.k_usage[1]) > (s.t_usage.prompt_tokens is not null)::int + (s.t_usage.total_tokens is not null)::int + ((s.t_usage.prompt_tokens_details.cached_tokens is not null or s.t_usage.prompt_tokens_details.cache_write_tokens is not null or s.t_usage.prompt_tokens_details.cache_creation_tokens is not null or s.t_usage.prompt_tokens_details.cache_creation_input_tokens is not null or (s.t_usage.prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens is not null) or s.t_usage.prompt_tokens_details.text_tokens is not null or s.t_usage.prompt_tokens_details.audio_tokens is not null or s.t_usage.prompt_tokens_details.image_tokens is not null))::int + (s.t_usage.cache_read_input_tokens is not null)::int + (s.t_usage.cached_tokens is not null)::int + (s.t_usage.cache_creation_input_tokens is not null)::int + (s.t_usage.completion_tokens is not null)::int + ((s.t_usage.completion_tokens_details.reasoning_tokens is not null or s.t_usage.completion_tokens_details.text_tokens is not null or s.t_usage.completion_tokens_details.accepted_prediction_tokens is not null or s.t_usage.completion_tokens_details.rejected_prediction_tokens is not null or s.t_usage.completion_tokens_details.audio_tokens is not null))::int + (s.t_usage.cost is not null)::int + ((s.t_usage.cost_details.upstream_inference_cost is not null or s.t_usage.cost_details.upstream_inference_prompt_cost is not null or s.t_usage.cost_details.upstream_inference_completions_cost is not null))::int + (s.t_usage.is_byok is not null)::int + (s.t_usage.cost_in_usd_ticks is not null)::int + (s.t_usage.num_sources_used is not null)::int + (s.t_usage.citation_tokens is not null)::int + (s.t_usage.num_search_queries is not null)::int + (s.t_usage.reasoning_tokens is not null)::int, false) or coalesce(len(s.k_usage[2]) > (s.t_usage.prompt_tokens_details.cached_tokens is not null)::int + (s.t_usage.prompt_tokens_details.cache_write_tokens is not null)::int + (s.t_usage.prompt_tokens_details.cache_creation_tokens is not null)::int + (s.t_usage.prompt_tokens_details.cache_creation_input_tokens is not null)::int + ((s.t_usage.prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens is not null))::int + (s.t_usage.prompt_tokens_details.text_tokens is not null)::int + (s.t_usage.prompt_tokens_details.audio_tokens is not null)::int + (s.t_usage.prompt_tokens_details.image_tokens is not null)::int, false) or coalesce(s.t_usage.prompt_tokens_details.text_tokens::varchar like '{%' or s.t_usage.prompt_tokens_details.text_tokens::varchar like '[%', false) or coalesce(len(s.k_usage[3]) > (s.t_usage.prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens is not null)::int, false) or coalesce(len(s.k_usage[4]) > (s.t_usage.completion_tokens_details.reasoning_tokens is not null)::int + (s.t_usage.completion_tokens_details.text_tokens is not null)::int + (s.t_usage.completion_tokens_details.accepted_prediction_tokens is not null)::int + (s.t_usage.completion_tokens_details.rejected_prediction_tokens is not null)::int + (s.t_usage.completion_tokens_details.audio_tokens is not null)::int, false) or coalesce(s.t_usage.completion_tokens_details.text_tokens::varchar like '{%' or s.t_usage.completion_tokens_details.text_tokens::varchar like '[%', false) or coalesce(s.t_usage.completion_tokens_details.accepted_prediction_tokens::varchar like '{%' or s.t_usage.completion_tokens_details.accepted_prediction_tokens::varchar like '[%', false) or coalesce(s.t_usage.completion_tokens_details.rejected_prediction_tokens::varchar like '{%' or s.t_usage.completion_tokens_details.rejected_prediction_tokens::varchar like '[%', false) or len(list_filter(s.k_usage[5], x -> x not in ('total_cost', 'input_tokens_cost', 'output_tokens_cost', 'reasoning_tokens_cost', 'request_cost', 'citation_tokens_cost', 'search_queries_cost'))) > 0 or coalesce(json_present(s.t_usage.cost -> '$.input_tokens_cost')::varchar like '{%' or json_present(s.t_usage.cost -> '$.input_tokens_cost')::varchar like '[%', false) or coalesce(json_present(s.t_usage.cost -> '$.output_tokens_cost')::varchar like '{%' or json_present(s.t_usage.cost -> '$.output_tokens_cost')::varchar like '[%', false) or coalesce(json_present(s.t_usage.cost -> '$.reasoning_tokens_cost')::varchar like '{%' or json_present(s.t_usage.cost -> '$.reasoning_tokens_cost')::varchar like '[%', false) or coalesce(json_present(s.t_usage.cost -> '$.request_cost')::varchar like '{%' or json_present(s.t_usage.cost -> '$.request_cost')::varchar like '[%', false) or coalesce(json_present(s.t_usage.cost -> '$.citation_tokens_cost')::varchar like '{%' or json_present(s.t_usage.cost -> '$.citation_tokens_cost')::varchar like '[%', false) or coalesce(json_present(s.t_usage.cost -> '$.search_queries_cost')::varchar like '{%' or json_present(s.t_usage.cost -> '$.search_queries_cost')::varchar like '[%', false) or coalesce(len(s.k_usage[6]) > (s.t_usage.cost_details.upstream_inference_cost is not null)::int + (s.t_usage.cost_details.upstream_inference_prompt_cost is not null)::int + (s.t_usage.cost_details.upstream_inference_completions_cost is not null)::int, false) or coalesce(s.t_usage.cost_details.upstream_inference_prompt_cost::varchar like '{%' or s.t_usage.cost_details.upstream_inference_prompt_cost::varchar like '[%', false) or coalesce(s.t_usage.cost_details.upstream_inference_completions_cost::varchar like '{%' or s.t_usage.cost_details.upstream_inference_completions_cost::varchar like '[%', false) end when 'groq_chat' then case when s.k_usage is not null then coalesce(len(s.k_usage[1]) > (s.t_usage.prompt_tokens is not null)::int + ((s.t_usage.prompt_tokens_details.cached_tokens is not null))::int + (s.t_usage.completion_tokens is not null)::int + (s.t_usage.total_tokens is not null)::int + (s.t_usage.queue_time is not null)::int + (s.t_usage.prompt_time is not null)::int + (s.t_usage.completion_time is not null)::int + (s.t_usage.total_time is not null)::int, false) or coalesce(s.t_usage.total_tokens::varchar like '{%' or s.t_usage.total_tokens::varchar like '[%', false) or coalesce(s.t_usage.queue_time::varchar like '{%' or s.t_usage.queue_time::varchar like '[%', false) or coalesce(s.t_usage.prompt_time::varchar like '{%' or s.t_usage.prompt_time::varchar like '[%', false) or coalesce(s.t_usage.completion_time::varchar like '{%' or s.t_usage.completion_time::varchar like '[%', false) or coalesce(s.t_usage.total_time::varchar like '{%' or s.t_usage.total_time::varchar like '[%', false) or coalesce(len(s.k_usage[2]) > (s.t_usage.prompt_tokens_details.cached_tokens is not null)::int, false) end when 'openai_responses' then case when s.k_usage is not null then coalesce(len(s.k_usage[1]) > (s.t_usage.input_tokens is not null)::int + ((s.t_usage.input_tokens_details.cached_tokens is not null or s.t_usage.input_tokens_details.cache_write_tokens is not null))::int + (s.t_usage.output_tokens is not null)::int + ((s.t_usage.output_tokens_details.reasoning_tokens is not null))::int + (s.t_usage.cost is not null)::int + (s.t_usage.cost_in_usd_ticks is not null)::int + (s.t_usage.total_tokens is not null)::int, false) or coalesce(s.t_usage.total_tokens::varchar like '{%' or s.t_usage.total_tokens::varchar like '[%', false) or coalesce(len(s.k_usage[7]) > (s.t_usage.input_tokens_details.cached_tokens is not null)::int + (s.t_usage.input_tokens_details.cache_write_tokens is not null)::int, false) or coalesce(len(s.k_usage[8]) > (s.t_usage.output_tokens_details.reasoning_tokens is not null)::int, false) end when 'anthropic_messages' then case when s.k_usage is not null then coalesce(len(s.k_usage[1]) > (s.t_usage.input_tokens is not null)::int + (s.t_usage.cache_read_input_tokens is not null)::int + (s.t_usage.cache_creation_input_tokens is not null)::int + ((s.t_usage.cache_creation.ephemeral_5m_input_tokens is not null or s.t_usage.cache_creation.ephemeral_1h_input_tokens is not null))::int + (s.t_usage.output_tokens is not null)::int + ((s.t_usage.output_tokens_details.thinking_tokens is not null))::int + (s.t_usage.service_tier is not null)::int + (s.t_usage.inference_geo is not null)::int + (s.t_usage.speed is not null)::int + ((s.t_usage.server_tool_use.web_search_requests is not null))::int, false) or coalesce(len(s.k_usage[9]) > (s.t_usage.cache_creation.ephemeral_5m_input_tokens is not null)::int + (s.t_usage.cache_creation.ephemeral_1h_input_tokens is not null)::int, false) or coalesce(len(s.k_usage[8]) > (s.t_usage.output_tokens_details.thinking_tokens is not null)::int, false) or coalesce(len(s.k_usage[10]) > (s.t_usage.server_tool_use.web_search_requests is not null)::int, false) end when 'gemini_generate_content' then case when s.k_usageMetadata is not null then coalesce(len(s.k_usageMetadata[1]) > (s.t_usageMetadata.promptTokenCount is not null)::int + (s.t_usageMetadata.toolUsePromptTokenCount is not null)::int + (s.t_usageMetadata.cachedContentTokenCount is not null)::int + (s.t_usageMetadata.candidatesTokenCount is not null)::int + (s.t_usageMetadata.thoughtsTokenCount is not null)::int + (s.t_usageMetadata.serviceTier is not null)::int + (s.t_usageMetadata.totalTokenCount is not null)::int + (s.t_usageMetadata.promptTokensDetails is not null)::int + (s.t_usageMetadata.cacheTokensDetails is not null)::int + (s.t_usageMetadata.candidatesTokensDetails is not null)::int + (s.t_usageMetadata.toolUsePromptTokensDetails is not null)::int + (s.t_usageMetadata.responseTokenCount is not null)::int, false) or coalesce(s.t_usageMetadata.totalTokenCount::varchar like '{%' or s.t_usageMetadata.totalTokenCount::varchar like '[%', false) or (s.t_usageMetadata.promptTokensDetails is not null and (not starts_with(s.t_usageMetadata.promptTokensDetails::varchar, '[') or not list_has_all(['OBJECT'], json_type(s.u_usageMetadata, '$.promptTokensDetails[*]')) or len(list_filter(flatten(json_keys(s.u_usageMetadata, '$.promptTokensDetails[*]')), x -> x not in ('tokenCount', 'modality'))) > 0 or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.promptTokensDetails[*].tokenCount')) or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.promptTokensDetails[*].modality')))) or (s.t_usageMetadata.cacheTokensDetails is not null and (not starts_with(s.t_usageMetadata.cacheTokensDetails::varchar, '[') or not list_has_all(['OBJECT'], json_type(s.u_usageMetadata, '$.cacheTokensDetails[*]')) or len(list_filter(flatten(json_keys(s.u_usageMetadata, '$.cacheTokensDetails[*]')), x -> x not in ('tokenCount', 'modality'))) > 0 or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.cacheTokensDetails[*].tokenCount')) or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.cacheTokensDetails[*].modality')))) or (s.t_usageMetadata.candidatesTokensDetails is not null and (not starts_with(s.t_usageMetadata.candidatesTokensDetails::varchar, '[') or not list_has_all(['OBJECT'], json_type(s.u_usageMetadata, '$.candidatesTokensDetails[*]')) or len(list_filter(flatten(json_keys(s.u_usageMetadata, '$.candidatesTokensDetails[*]')), x -> x not in ('tokenCount', 'modality'))) > 0 or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.candidatesTokensDetails[*].tokenCount')) or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.candidatesTokensDetails[*].modality')))) or (s.t_usageMetadata.toolUsePromptTokensDetails is not null and (not starts_with(s.t_usageMetadata.toolUsePromptTokensDetails::varchar, '[') or not list_has_all(['OBJECT'], json_type(s.u_usageMetadata, '$.toolUsePromptTokensDetails[*]')) or len(list_filter(flatten(json_keys(s.u_usageMetadata, '$.toolUsePromptTokensDetails[*]')), x -> x not in ('tokenCount', 'modality'))) > 0 or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.toolUsePromptTokensDetails[*].tokenCount')) or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usageMetadata, '$.toolUsePromptTokensDetails[*].modality')))) end when 'bedrock_converse' then case when s.k_usage is not null then coalesce(len(s.k_usage[1]) > (s.t_usage.inputTokens is not null)::int + (s.t_usage.cacheReadInputTokens is not null)::int + (s.t_usage.cacheWriteInputTokens is not null)::int + (s.t_usage.cacheDetails is not null)::int + (s.t_usage.cacheDetails is not null)::int + (s.t_usage.outputTokens is not null)::int + (s.t_usage.totalTokens is not null)::int + (s.t_usage.cacheReadInputTokenCount is not null)::int + (s.t_usage.cacheWriteInputTokenCount is not null)::int, false) or (s.t_usage.cacheDetails is not null and (not starts_with(s.t_usage.cacheDetails::varchar, '[') or not list_has_all(['OBJECT'], json_type(s.u_usage, '$.cacheDetails[*]')) or len(list_filter(flatten(json_keys(s.u_usage, '$.cacheDetails[*]')), x -> x not in ('inputTokens'))) > 0 or list_has_any(['OBJECT', 'ARRAY'], json_type(s.u_usage, '$.cacheDetails[*].inputTokens')))) or coalesce(s.t_usage.totalTokens::varchar like '{%' or s.t_usage.totalTokens::varchar like '[%', false) or coalesce(s.t_usage.cacheReadInputTokenCount::varchar like '{%' or s.t_usage.cacheReadInputTokenCount::varchar like '[%', false) or coalesce(s.t_usage.cacheWriteInputTokenCount::varchar like '{%' or s.t_usage.cacheWriteInputTokenCount::varchar like '[%', false) end end, false) as undeclared_usage
        -- </generated>
    from keyed s
),
valued as (
    select
        p.*,
        -- <generated valued>
        plain_count(p.v_prompt) as n_prompt, plain_count(p.v_extra_prompt) as n_extra_prompt, plain_count(p.v_uncached) as n_uncached,
        plain_count(p.v_read) as n_read, plain_count(p.v_write) as n_write, plain_count(p.v_write_5m) as n_write_5m,
        plain_count(p.v_write_1h) as n_write_1h, plain_count(p.v_output) as n_output, plain_count(p.v_output_extra) as n_output_extra,
        plain_count(p.v_reasoning) as n_reasoning, plain_count(p.v_total) as n_total, plain_count(p.v_latency_ms) as n_latency_ms,
        plain_json_text(p.v_model) as t_model, plain_json_text(p.v_id) as t_id, plain_json_text(p.v_iso) as t_iso,
        plain_json_text(p.v_tier) as t_tier, plain_json_text(p.v_geo) as t_geo, plain_json_text(p.v_speed) as t_speed,
        -- </generated>
        plain_json_text(p.env_model) as s_env_model, plain_json_text(p.env_tenant) as s_env_tenant, plain_json_text(p.env_app) as s_env_app,
        plain_json_text(p.env_request_id) as s_env_request_id, plain_json_text(p.env_id) as s_env_id,
        plain_json_text(p.prefix_hash) as s_prefix_hash, plain_json_text(p.prompt_cache_key) as s_prompt_cache_key,
        plain_json_text(p.env_ts) as s_env_ts
    from picked p
),
resolved as (
    select
        v.*,
        -- every value present is plain: a count is a non-negative integer below 10^12, a text a JSON string
        not v.bad_provider and not v.unsupported and not v.undeclared_usage and v.reported_cost_usd is null
            -- <generated plain_checks>
            and (v.v_prompt is null or v.n_prompt < 1000000000000) and (v.v_extra_prompt is null or v.n_extra_prompt < 1000000000000)
            and (v.v_uncached is null or v.n_uncached < 1000000000000) and (v.v_read is null or v.n_read < 1000000000000)
            and (v.v_write is null or v.n_write < 1000000000000) and (v.v_write_5m is null or v.n_write_5m < 1000000000000)
            and (v.v_write_1h is null or v.n_write_1h < 1000000000000) and (v.v_output is null or v.n_output < 1000000000000)
            and (v.v_output_extra is null or v.n_output_extra < 1000000000000) and (v.v_reasoning is null or v.n_reasoning < 1000000000000)
            and (v.v_total is null or v.n_total < 1000000000000) and (v.v_latency_ms is null or v.n_latency_ms < 1000000000000)
            and (v.v_model is null or v.t_model is not null) and (v.v_id is null or v.t_id is not null)
            and (v.v_iso is null or v.t_iso is not null) and (v.v_tier is null or v.t_tier is not null)
            and (v.v_geo is null or v.t_geo is not null) and (v.v_speed is null or v.t_speed is not null)
            -- </generated>
            and (v.env_model is null or v.s_env_model is not null) and (v.env_tenant is null or v.s_env_tenant is not null)
            and (v.env_app is null or v.s_env_app is not null) and (v.env_request_id is null or v.s_env_request_id is not null)
            and (v.env_id is null or v.s_env_id is not null) and (v.prefix_hash is null or v.s_prefix_hash is not null)
            and (v.prompt_cache_key is null or v.s_prompt_cache_key is not null)
            as values_plain,
        coalesce(
            case when list_contains($deployment_names::varchar[], coalesce(v.s_env_model, v.t_model, $model))
                 then ($deployment_models::varchar[])[list_position($deployment_names::varchar[], coalesce(v.s_env_model, v.t_model, $model))] end,
            v.s_env_model, v.t_model, $model) as model_reported,
        -- the envelope's time (ISO-8601 or whole epoch seconds), else the body's, else source.yaml's (others: deferred)
        case
            when v.env_ts is not null then coalesce(utc_instant(v.s_env_ts),
                                                    try(to_timestamp(plain_count(v.env_ts)::double)))
            when v.v_epoch is not null then try(to_timestamp(plain_count(v.v_epoch)::double))
            when v.v_iso is not null then utc_instant(v.t_iso)
            when $default_ts is not null then utc_instant($default_ts)
        end as ts,
        (v.env_ts is null or v.s_env_ts is not null or plain_count(v.env_ts) is not null)
            and (v.env_ts is not null or v.v_epoch is null or plain_count(v.v_epoch) is not null) as time_plain
    from valued v
),
counted as (
    select
        r.*,
        coalesce(
            provider_alias(r.declared_provider),
            case
                when r.declared_provider is not null then null
                when r.inferred_provider is not null then r.inferred_provider
                when r.body_upstream like '"%' and r.model_reported like '%/%' then 'openrouter'
                else coalesce(provider_of_model(r.model_reported), r.default_provider)
            end
        ) as provider,
        r.n_prompt + coalesce(r.n_extra_prompt, 0) as n_prompt_reported,
        coalesce(r.n_read, 0) as n_read_all,
        cache_write_5m_of(r.n_write_5m, r.n_write_1h, r.n_write) as n_write_5m_all,
        coalesce(r.n_write_1h, 0) as n_write_1h_all
    from resolved r
),
classed as (
    select
        c.*,
        -- the token classes as the general normaliser computes them (sql/macros/token_classes.sql)
        uncached_input_of(c.additive, c.n_prompt_reported, c.n_uncached, c.n_read_all, c.n_write_5m_all, c.n_write_1h_all)
            as n_uncached_all,
        whole_prompt_of(c.additive, c.n_prompt_reported, c.n_uncached, c.n_read_all, c.n_write_5m_all, c.n_write_1h_all)
            as n_prompt_all,
        output_of(c.n_output, c.n_output_extra, c.n_reasoning,
            -- <generated reasoning_beside: the formats and providers reporting reasoning beside the output count>
            (c.source_format = 'openai_chat' and c.provider in ('xai'))
            -- </generated>
        ) as n_output_all
    from counted c
)
select
    c.source_format,
    coalesce(c.source_format is not null and c.values_plain and c.time_plain and c.provider is not null
        and (c.n_prompt is not null or c.additive) and (c.n_uncached is not null or not c.additive)
        and (c.n_output is not null or c.output_optional)
        and c.ts is not null and isfinite(c.ts) and c.ts >= timestamptz '2000-01-01 00:00:00+00'
        and c.ts >= $earliest::timestamptz and c.ts <= $latest::timestamptz
        and c.n_uncached_all >= 0
        and not (c.v_write is not null and (c.v_write_5m is not null or c.v_write_1h is not null)
                 and c.n_write_5m_all + c.n_write_1h_all <> c.n_write)
        and not coalesce(c.n_reasoning > c.n_output_all and not c.reasoning_may_exceed_output, false)
        -- <generated thinking_only_in_total: a total holding thinking the output count leaves out: the general normaliser's>
        and not coalesce((c.source_format = 'openai_chat' and c.provider in ('gemini')), false)
        -- </generated>
        , false) as accepted,
    coalesce(nonblank(c.s_env_request_id), nonblank(c.s_env_id), nonblank(c.t_id)) as request_id,  -- null: the file_items view's
    c.ts, c.provider, c.model_reported as model, coalesce(c.s_env_tenant, $tenant, 'default') as tenant,
    coalesce(c.s_env_app, $app, 'default') as app, c.t_tier as service_tier, lower(c.t_geo) as inference_geo,
    lower(c.t_speed) as speed,
    -- the logged request's explicit prefix key (OpenAI prompt_cache_key), else a gateway's prefix hash, else the series
    coalesce('key:' || md5(coalesce(c.s_prompt_cache_key, c.s_prefix_hash))[1:16],
             'series:' || md5(concat_ws('|', c.provider, c.model_reported, coalesce(c.s_env_tenant, $tenant, 'default'),
                                        coalesce(c.s_env_app, $app, 'default')))[1:16]) as prefix_family,
    c.n_prompt_all as prompt_tokens, c.n_uncached_all as uncached_input_tokens, c.n_read_all as cache_read_tokens,
    c.n_write_5m_all as cache_write_5m_tokens, c.n_write_1h_all as cache_write_1h_tokens, c.n_output_all as output_tokens,
    c.n_reasoning as reasoning_tokens, 1 as request_count, c.n_prompt_all as tier_prompt_tokens,
    c.n_latency_ms::decimal(18, 3) as latency_ms,  -- whole ms (Bedrock Converse metrics.latencyMs); others: the general reader's
    null::decimal(18, 3) as ttft_ms, null::varchar as latency_issue, null::json as unmapped_usage,
    write_split_issue(c.reports_write_split, c.n_write_5m, c.n_write_1h, c.n_write) as usage_issue,
    c.has_request  -- a logged request body: its line is read again for its fingerprint (stage._fingerprint_chunk)
from classed c;
