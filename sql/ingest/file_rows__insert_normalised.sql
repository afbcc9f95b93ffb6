-- Normalise one chunk of usage items (temp table lines_in: source_line, source_item, line) into file_rows.
--
-- Each item is a provider response body, an envelope around one
--   {"ts", "provider"?, "model"?, "tenant"?, "app"?, "request_id"?, "request"?, "response": body},
-- a batch result line, a usage-report result, a span, a gateway or tracing-tool row, or a canonical
-- row (containers and streams were split and folded by pipelines/lib/containers.py). The adapter is
-- chosen per item by its shape (`shaped`); `field_map` says where each adapter finds each field
-- (reference/providers.md sections 0-10, docs/formats.md). All paths of an item's adapter are read in one
-- json_extract call over that adapter's constant path list ($paths_<adapter>), so each item's JSON is
-- parsed once for the field values and only its own adapter's paths are looked up.
--   inclusive: the prompt count contains cache reads and writes (uncached = prompt - read - write);
--   additive: the uncached remainder is reported beside them (a reported total is checked against the sum);
--   total_decides: inclusive unless the reported total shows the prompt count left the cache out;
--   trace: cache reads come from replaying block hashes through a cache model.
-- A JSON arrow after AND / OR / NOT or on the right of `=` is written in parentheses, `a or (j ->> '$') = 'x'`:
-- DuckDB 1.5 parses `a or j ->> '$' = 'x'` as `((a or j) ->> '$') = 'x'` (tests/sql/test_json_arrows.py).
-- Parameters: $paths_<adapter> (the sorted distinct paths of each adapter in field_map below, see
--   ingest.adapter_paths: DuckDB's multi-path json_extract needs a constant list), $source_file, $provider, $model, $tenant, $app, $default_ts (source.yaml defaults, may be
--   null), $deployment_names / $deployment_models (source.yaml deployments: Azure deployment -> model), $trace_start (ISO-8601 UTC text or null),
--   $block_size (tokens per trace block), $earliest (first partition day), $latest (later is "the future").
-- An item is rejected (reason not null) for malformed JSON, an unknown shape or provider, a failed batch
-- request, a bad or missing timestamp, invalid counts, or arithmetic that does not close. Nothing is clamped.
insert into file_rows
with
fields (field_no, field) as (
    values (1, 'prompt'), (2, 'extra_prompt'), (3, 'uncached'), (4, 'read'), (5, 'hit'), (6, 'miss'),
           (7, 'write'), (8, 'write_5m'), (9, 'write_1h'), (10, 'output'), (11, 'output_extra'), (12, 'reasoning'),
           (13, 'model'), (14, 'id'), (15, 'epoch'), (16, 'iso'), (17, 'tier'), (18, 'request_count'),
           (19, 'cost'), (20, 'total'), (21, 'provider'), (22, 'tenant'), (23, 'app'), (24, 'context_window'),
           (25, 'gateway_cache_hit'), (26, 'batch'), (27, 'cost_upstream'), (28, 'byok'), (29, 'status'),
           -- latency (never billed; a bad value is left null and named in latency_issue): instants as
           -- ISO-8601 text, durations in milliseconds (_ms) or seconds (_s)
           (30, 'start_at'), (31, 'first_token_at'), (32, 'end_at'), (33, 'latency_ms'), (34, 'latency_s'),
           (35, 'ttft_ms'), (36, 'ttft_s')
),
-- (adapter, field, alternative, JSON path): the first alternative present wins
field_map (source_format, field, alt, path) as (
    values
    -- OpenAI Chat Completions; also Azure, xAI, Mistral, OpenRouter (usage.cost = billed USD), vLLM, SGLang
    ('openai_chat', 'prompt', 1, '$.usage.prompt_tokens'),
    ('openai_chat', 'read', 1, '$.usage.prompt_tokens_details.cached_tokens'),
    ('openai_chat', 'read', 2, '$.usage.cache_read_input_tokens'),
    ('openai_chat', 'write', 1, '$.usage.prompt_tokens_details.cache_write_tokens'),
    ('openai_chat', 'write', 2, '$.usage.cache_creation_input_tokens'),
    ('openai_chat', 'write', 3, '$.usage.prompt_tokens_details.cache_creation_tokens'),
    ('openai_chat', 'output', 1, '$.usage.completion_tokens'),
    ('openai_chat', 'reasoning', 1, '$.usage.completion_tokens_details.reasoning_tokens'),
    ('openai_chat', 'model', 1, '$.model'), ('openai_chat', 'id', 1, '$.id'),
    ('openai_chat', 'epoch', 1, '$.created'), ('openai_chat', 'tier', 1, '$.service_tier'),
    ('openai_chat', 'cost', 1, '$.usage.cost'),
    ('openai_chat', 'cost_upstream', 1, '$.usage.cost_details.upstream_inference_cost'), ('openai_chat', 'byok', 1, '$.usage.is_byok'),
    -- OpenAI Responses
    ('openai_responses', 'prompt', 1, '$.usage.input_tokens'),
    ('openai_responses', 'read', 1, '$.usage.input_tokens_details.cached_tokens'),
    ('openai_responses', 'write', 1, '$.usage.input_tokens_details.cache_write_tokens'),
    ('openai_responses', 'output', 1, '$.usage.output_tokens'),
    ('openai_responses', 'reasoning', 1, '$.usage.output_tokens_details.reasoning_tokens'),
    ('openai_responses', 'model', 1, '$.model'), ('openai_responses', 'id', 1, '$.id'),
    ('openai_responses', 'epoch', 1, '$.created_at'), ('openai_responses', 'tier', 1, '$.service_tier'),
    ('openai_responses', 'cost', 1, '$.usage.cost'),
    -- DeepSeek: prompt_tokens = hit + miss; the nested OpenAI-style field wins when a proxy adds it; no write fee
    ('deepseek_chat', 'prompt', 1, '$.usage.prompt_tokens'),
    ('deepseek_chat', 'read', 1, '$.usage.prompt_tokens_details.cached_tokens'),
    ('deepseek_chat', 'read', 2, '$.usage.prompt_cache_hit_tokens'),
    ('deepseek_chat', 'hit', 1, '$.usage.prompt_cache_hit_tokens'),
    ('deepseek_chat', 'miss', 1, '$.usage.prompt_cache_miss_tokens'),
    ('deepseek_chat', 'output', 1, '$.usage.completion_tokens'),
    ('deepseek_chat', 'reasoning', 1, '$.usage.completion_tokens_details.reasoning_tokens'),
    ('deepseek_chat', 'model', 1, '$.model'), ('deepseek_chat', 'id', 1, '$.id'), ('deepseek_chat', 'epoch', 1, '$.created'),
    -- Anthropic Messages (also Message Batches results): input_tokens is the uncached remainder; 5m / 1h write split
    ('anthropic_messages', 'uncached', 1, '$.usage.input_tokens'),
    ('anthropic_messages', 'read', 1, '$.usage.cache_read_input_tokens'),
    ('anthropic_messages', 'write', 1, '$.usage.cache_creation_input_tokens'),
    ('anthropic_messages', 'write_5m', 1, '$.usage.cache_creation.ephemeral_5m_input_tokens'),
    ('anthropic_messages', 'write_1h', 1, '$.usage.cache_creation.ephemeral_1h_input_tokens'),
    ('anthropic_messages', 'output', 1, '$.usage.output_tokens'),
    ('anthropic_messages', 'reasoning', 1, '$.usage.output_tokens_details.thinking_tokens'),
    ('anthropic_messages', 'model', 1, '$.model'), ('anthropic_messages', 'id', 1, '$.id'),
    ('anthropic_messages', 'tier', 1, '$.usage.service_tier'),
    -- Anthropic Admin usage report result (no flat cache_creation_input_tokens; no request count)
    ('anthropic_usage_report', 'uncached', 1, '$.uncached_input_tokens'),
    ('anthropic_usage_report', 'read', 1, '$.cache_read_input_tokens'),
    ('anthropic_usage_report', 'write', 1, '$.cache_creation_input_tokens'),
    ('anthropic_usage_report', 'write_5m', 1, '$.cache_creation.ephemeral_5m_input_tokens'),
    ('anthropic_usage_report', 'write_1h', 1, '$.cache_creation.ephemeral_1h_input_tokens'),
    ('anthropic_usage_report', 'output', 1, '$.output_tokens'),
    ('anthropic_usage_report', 'model', 1, '$.model'), ('anthropic_usage_report', 'iso', 1, '$.starting_at'),
    ('anthropic_usage_report', 'tier', 1, '$.service_tier'), ('anthropic_usage_report', 'context_window', 1, '$.context_window'),
    -- OpenAI organisation Usage API completions result, after the July 2026 change: input_tokens =
    -- input_uncached_tokens + input_cached_tokens + input_cache_write_tokens (all modalities)
    ('openai_usage_bucket', 'prompt', 1, '$.input_tokens'),
    ('openai_usage_bucket', 'uncached', 1, '$.input_uncached_tokens'),
    ('openai_usage_bucket', 'read', 1, '$.input_cached_tokens'),
    ('openai_usage_bucket', 'write', 1, '$.input_cache_write_tokens'),
    ('openai_usage_bucket', 'output', 1, '$.output_tokens'),
    ('openai_usage_bucket', 'model', 1, '$.model'), ('openai_usage_bucket', 'epoch', 1, '$.bucket_start_time'),
    ('openai_usage_bucket', 'tier', 1, '$.service_tier'), ('openai_usage_bucket', 'request_count', 1, '$.num_model_requests'),
    ('openai_usage_bucket', 'batch', 1, '$.batch'), ('openai_usage_bucket', 'tenant', 1, '$.project_id'),
    -- ... before it: input_tokens was text input including cached, audio was reported beside it
    ('openai_usage_bucket_pre_2026_07', 'prompt', 1, '$.input_tokens'),
    ('openai_usage_bucket_pre_2026_07', 'extra_prompt', 1, '$.input_audio_tokens'),
    ('openai_usage_bucket_pre_2026_07', 'read', 1, '$.input_cached_tokens'),
    ('openai_usage_bucket_pre_2026_07', 'output', 1, '$.output_tokens'),
    ('openai_usage_bucket_pre_2026_07', 'output_extra', 1, '$.output_audio_tokens'),
    ('openai_usage_bucket_pre_2026_07', 'model', 1, '$.model'), ('openai_usage_bucket_pre_2026_07', 'epoch', 1, '$.bucket_start_time'),
    ('openai_usage_bucket_pre_2026_07', 'tier', 1, '$.service_tier'),
    ('openai_usage_bucket_pre_2026_07', 'request_count', 1, '$.num_model_requests'),
    ('openai_usage_bucket_pre_2026_07', 'batch', 1, '$.batch'), ('openai_usage_bucket_pre_2026_07', 'tenant', 1, '$.project_id'),
    -- Gemini / Vertex: promptTokenCount includes cachedContentTokenCount; thoughts are output beside candidates;
    -- toolUsePromptTokenCount is extra prompt-side input
    ('gemini_generate_content', 'prompt', 1, '$.usageMetadata.promptTokenCount'),
    ('gemini_generate_content', 'extra_prompt', 1, '$.usageMetadata.toolUsePromptTokenCount'),
    ('gemini_generate_content', 'read', 1, '$.usageMetadata.cachedContentTokenCount'),
    ('gemini_generate_content', 'output', 1, '$.usageMetadata.candidatesTokenCount'),
    ('gemini_generate_content', 'output_extra', 1, '$.usageMetadata.thoughtsTokenCount'),
    ('gemini_generate_content', 'reasoning', 1, '$.usageMetadata.thoughtsTokenCount'),
    ('gemini_generate_content', 'model', 1, '$.modelVersion'), ('gemini_generate_content', 'model', 2, '$.model'), ('gemini_generate_content', 'id', 1, '$.responseId'),
    ('gemini_generate_content', 'iso', 1, '$.createTime'), ('gemini_generate_content', 'tier', 1, '$.usageMetadata.serviceTier'),
    -- Bedrock Converse: inputTokens excludes cache reads and writes; the body names no model
    ('bedrock_converse', 'uncached', 1, '$.usage.inputTokens'),
    ('bedrock_converse', 'read', 1, '$.usage.cacheReadInputTokens'),
    ('bedrock_converse', 'write', 1, '$.usage.cacheWriteInputTokens'),
    ('bedrock_converse', 'output', 1, '$.usage.outputTokens'), ('bedrock_converse', 'latency_ms', 1, '$.metrics.latencyMs'),
    -- Bedrock model-invocation log record (CloudWatch Logs / S3): same additive counts, with model and time
    ('bedrock_invocation_log', 'uncached', 1, '$.input.inputTokenCount'),
    ('bedrock_invocation_log', 'read', 1, '$.input.cacheReadInputTokenCount'),
    ('bedrock_invocation_log', 'write', 1, '$.input.cacheWriteInputTokenCount'),
    ('bedrock_invocation_log', 'output', 1, '$.output.outputTokenCount'),
    ('bedrock_invocation_log', 'model', 1, '$.modelId'), ('bedrock_invocation_log', 'id', 1, '$.requestId'),
    ('bedrock_invocation_log', 'iso', 1, '$.timestamp'),
    ('bedrock_invocation_log', 'latency_ms', 1, '$.output.outputBodyJson.metrics.latencyMs'),
    -- Cohere v2 chat: billed_units is what is billed (genai-prices' default Cohere extractor reads it);
    -- usage.cached_tokens counts against the raw token count and carries no discount on the price card
    ('cohere_chat', 'uncached', 1, '$.usage.billed_units.input_tokens'),
    ('cohere_chat', 'output', 1, '$.usage.billed_units.output_tokens'),
    ('cohere_chat', 'model', 1, '$.model'), ('cohere_chat', 'id', 1, '$.id'),
    -- SGLang native /generate: meta_info.cached_tokens is part of prompt_tokens
    ('sglang_generate', 'prompt', 1, '$.meta_info.prompt_tokens'),
    ('sglang_generate', 'read', 1, '$.meta_info.cached_tokens'),
    ('sglang_generate', 'output', 1, '$.meta_info.completion_tokens'),
    ('sglang_generate', 'reasoning', 1, '$.meta_info.reasoning_tokens'),
    ('sglang_generate', 'id', 1, '$.meta_info.id'), ('sglang_generate', 'epoch', 1, '$.meta_info.response_sent_to_client_ts'),
    ('sglang_generate', 'latency_s', 1, '$.meta_info.e2e_latency'),
    -- OpenTelemetry GenAI span (attributes): input counts include cache reads and writes (semconv SHOULD);
    -- older spellings accepted as Sentry/Relay do
    ('otel_genai_span', 'prompt', 1, '$."gen_ai.usage.input_tokens"'),
    ('otel_genai_span', 'prompt', 2, '$."gen_ai.usage.prompt_tokens"'),
    ('otel_genai_span', 'read', 1, '$."gen_ai.usage.cache_read.input_tokens"'),
    ('otel_genai_span', 'read', 2, '$."gen_ai.usage.cache_read_input_tokens"'),
    ('otel_genai_span', 'read', 3, '$."gen_ai.usage.input_tokens.cached"'),
    ('otel_genai_span', 'write', 1, '$."gen_ai.usage.cache_creation.input_tokens"'),
    ('otel_genai_span', 'write', 2, '$."gen_ai.usage.cache_creation_input_tokens"'),
    ('otel_genai_span', 'write', 3, '$."gen_ai.usage.input_tokens.cache_write"'),
    ('otel_genai_span', 'output', 1, '$."gen_ai.usage.output_tokens"'),
    ('otel_genai_span', 'output', 2, '$."gen_ai.usage.completion_tokens"'),
    ('otel_genai_span', 'reasoning', 1, '$."gen_ai.usage.reasoning.output_tokens"'),
    ('otel_genai_span', 'model', 1, '$."gen_ai.response.model"'), ('otel_genai_span', 'model', 2, '$."gen_ai.request.model"'),
    ('otel_genai_span', 'id', 1, '$."gen_ai.response.id"'),
    ('otel_genai_span', 'provider', 1, '$."gen_ai.provider.name"'), ('otel_genai_span', 'provider', 2, '$."gen_ai.system"'),
    ('otel_genai_span', 'tier', 1, '$."openai.response.service_tier"'),
    -- (span start and end come from the span itself: startTimeUnixNano, endTimeUnixNano)
    ('otel_genai_span', 'ttft_s', 1, '$."gen_ai.response.time_to_first_chunk"'),
    ('otel_genai_span', 'ttft_s', 2, '$."gen_ai.response.time_to_first_token"'),
    -- OpenInference span attributes (Arize Phoenix, via OTLP or as a plain object)
    ('openinference_span', 'prompt', 1, '$."llm.token_count.prompt"'),
    ('openinference_span', 'read', 1, '$."llm.token_count.prompt_details.cache_read"'),
    ('openinference_span', 'write', 1, '$."llm.token_count.prompt_details.cache_write"'),
    ('openinference_span', 'output', 1, '$."llm.token_count.completion"'),
    ('openinference_span', 'reasoning', 1, '$."llm.token_count.completion_details.reasoning"'),
    ('openinference_span', 'total', 1, '$."llm.token_count.total"'),
    ('openinference_span', 'model', 1, '$."llm.model_name"'),
    ('openinference_span', 'provider', 1, '$."llm.provider"'), ('openinference_span', 'provider', 2, '$."llm.system"'),
    -- LiteLLM spend-log row: metadata.usage_object is the cache-inclusive normalised Usage; spend is billed USD;
    -- cache_hit is LiteLLM's own response cache (not provider prompt caching)
    ('litellm_spend_log', 'prompt', 1, '$.metadata.usage_object.prompt_tokens'), ('litellm_spend_log', 'prompt', 2, '$.prompt_tokens'),
    ('litellm_spend_log', 'read', 1, '$.metadata.usage_object.prompt_tokens_details.cached_tokens'),
    ('litellm_spend_log', 'read', 2, '$.metadata.usage_object.cache_read_input_tokens'),
    ('litellm_spend_log', 'write', 1, '$.metadata.usage_object.cache_creation_input_tokens'),
    ('litellm_spend_log', 'write', 2, '$.metadata.usage_object.prompt_tokens_details.cache_creation_tokens'),
    ('litellm_spend_log', 'output', 1, '$.metadata.usage_object.completion_tokens'), ('litellm_spend_log', 'output', 2, '$.completion_tokens'),
    ('litellm_spend_log', 'reasoning', 1, '$.metadata.usage_object.completion_tokens_details.reasoning_tokens'),
    ('litellm_spend_log', 'model', 1, '$.model'), ('litellm_spend_log', 'id', 1, '$.request_id'),
    ('litellm_spend_log', 'iso', 1, '$.startTime'), ('litellm_spend_log', 'cost', 1, '$.spend'),
    ('litellm_spend_log', 'provider', 1, '$.custom_llm_provider'), ('litellm_spend_log', 'tenant', 1, '$.team_id'),
    ('litellm_spend_log', 'gateway_cache_hit', 1, '$.cache_hit'), ('litellm_spend_log', 'status', 1, '$.status'),
    ('litellm_spend_log', 'start_at', 1, '$.startTime'), ('litellm_spend_log', 'first_token_at', 1, '$.completionStartTime'),
    ('litellm_spend_log', 'end_at', 1, '$.endTime'), ('litellm_spend_log', 'latency_ms', 1, '$.request_duration_ms'),
    -- Langfuse generation (API item or export, camelCase or snake_case): usage_details keys add up to the
    -- prompt (input = uncached remainder); reasoning keys are billed beside output
    ('langfuse_generation', 'uncached', 1, '$.u.input'),
    ('langfuse_generation', 'read', 1, '$.u.input_cached_tokens'), ('langfuse_generation', 'read', 2, '$.u.input_cache_read'),
    ('langfuse_generation', 'read', 3, '$.u.cache_read_input_tokens'),
    ('langfuse_generation', 'write', 1, '$.u.input_cache_creation'), ('langfuse_generation', 'write', 2, '$.u.cache_creation_input_tokens'),
    ('langfuse_generation', 'write', 3, '$.u.cache_write_tokens'),
    ('langfuse_generation', 'write_5m', 1, '$.u.input_cache_creation_5m'),
    ('langfuse_generation', 'write_1h', 1, '$.u.input_cache_creation_1h'),
    ('langfuse_generation', 'output', 1, '$.u.output'),
    ('langfuse_generation', 'output_extra', 1, '$.u.output_reasoning_tokens'), ('langfuse_generation', 'output_extra', 2, '$.u.output_reasoning'),
    ('langfuse_generation', 'output_extra', 3, '$.u.reasoning_tokens'),
    ('langfuse_generation', 'reasoning', 1, '$.u.output_reasoning_tokens'), ('langfuse_generation', 'reasoning', 2, '$.u.output_reasoning'),
    ('langfuse_generation', 'reasoning', 3, '$.u.reasoning_tokens'),
    ('langfuse_generation', 'model', 1, '$.model'), ('langfuse_generation', 'id', 1, '$.id'), ('langfuse_generation', 'iso', 1, '$.start'),
    ('langfuse_generation', 'total', 1, '$.u.total'),
    ('langfuse_generation', 'cost', 1, '$.c.total'), ('langfuse_generation', 'cost', 2, '$.calculatedTotalCost'),
    ('langfuse_generation', 'cost', 3, '$.totalCost'),
    ('langfuse_generation', 'start_at', 1, '$.start'), ('langfuse_generation', 'first_token_at', 1, '$.completion_start'),
    ('langfuse_generation', 'end_at', 1, '$.end'), ('langfuse_generation', 'latency_s', 1, '$.latency'),
    ('langfuse_generation', 'ttft_s', 1, '$.time_to_first_token'),
    -- LangChain usage_metadata: input_tokens includes input_token_details (cache_read, cache_creation)
    ('langchain_usage_metadata', 'prompt', 1, '$.usage_metadata.input_tokens'),
    ('langchain_usage_metadata', 'read', 1, '$.usage_metadata.input_token_details.cache_read'),
    ('langchain_usage_metadata', 'write', 1, '$.usage_metadata.input_token_details.cache_creation'),
    ('langchain_usage_metadata', 'output', 1, '$.usage_metadata.output_tokens'),
    ('langchain_usage_metadata', 'reasoning', 1, '$.usage_metadata.output_token_details.reasoning'),
    ('langchain_usage_metadata', 'model', 1, '$.model'), ('langchain_usage_metadata', 'model', 2, '$.response_metadata.model_name'),
    ('langchain_usage_metadata', 'provider', 1, '$.model_provider'),
    -- Vercel AI SDK 4 result: promptTokens is the provider's own input count (Anthropic: uncached only,
    -- cache counts in providerMetadata.anthropic; OpenAI: inclusive, cachedPromptTokens inside)
    ('ai_sdk_anthropic', 'uncached', 1, '$.usage.promptTokens'),
    ('ai_sdk_anthropic', 'read', 1, '$.providerMetadata.anthropic.cacheReadInputTokens'),
    ('ai_sdk_anthropic', 'write', 1, '$.providerMetadata.anthropic.cacheCreationInputTokens'),
    ('ai_sdk_anthropic', 'output', 1, '$.usage.completionTokens'), ('ai_sdk_anthropic', 'model', 1, '$.model'),
    ('ai_sdk', 'prompt', 1, '$.usage.promptTokens'),
    ('ai_sdk', 'read', 1, '$.providerMetadata.openai.cachedPromptTokens'),
    ('ai_sdk', 'output', 1, '$.usage.completionTokens'), ('ai_sdk', 'model', 1, '$.model'),
    -- canonical core.usage columns (CSV, Parquet or JSON rows)
    ('canonical', 'uncached', 1, '$.uncached_input_tokens'), ('canonical', 'read', 1, '$.cache_read_tokens'),
    ('canonical', 'write_5m', 1, '$.cache_write_5m_tokens'), ('canonical', 'write_1h', 1, '$.cache_write_1h_tokens'),
    ('canonical', 'prompt', 1, '$.prompt_tokens'),
    ('canonical', 'output', 1, '$.output_tokens'), ('canonical', 'reasoning', 1, '$.reasoning_tokens'),
    ('canonical', 'model', 1, '$.model'), ('canonical', 'id', 1, '$.request_id'), ('canonical', 'iso', 1, '$.ts'),
    ('canonical', 'tier', 1, '$.service_tier'), ('canonical', 'provider', 1, '$.provider'),
    ('canonical', 'tenant', 1, '$.tenant'), ('canonical', 'app', 1, '$.app'),
    ('canonical', 'request_count', 1, '$.request_count'), ('canonical', 'cost', 1, '$.reported_cost_usd'),
    ('canonical', 'latency_ms', 1, '$.latency_ms'), ('canonical', 'ttft_ms', 1, '$.ttft_ms'),
    -- Mooncake block-hash trace: cache reads come from replaying hash_ids through a cache model
    ('mooncake_trace', 'prompt', 1, '$.input_length'), ('mooncake_trace', 'output', 1, '$.output_length')
),
formats (source_format, inferred_provider, convention) as (
    values ('openai_chat', 'by_model', 'inclusive'), ('openai_responses', 'openai', 'inclusive'),
           ('deepseek_chat', 'deepseek', 'inclusive'), ('anthropic_messages', 'anthropic', 'additive'),
           ('anthropic_usage_report', 'anthropic', 'additive'), ('openai_usage_bucket', 'openai', 'additive'),
           ('openai_usage_bucket_pre_2026_07', 'openai', 'inclusive'), ('gemini_generate_content', 'gemini', 'inclusive'),
           ('bedrock_converse', 'bedrock', 'additive'), ('bedrock_invocation_log', 'bedrock', 'additive'),
           ('cohere_chat', 'cohere', 'additive'), ('sglang_generate', 'self_hosted', 'inclusive'),
           ('otel_genai_span', 'by_model', 'inclusive'), ('openinference_span', 'by_model', 'total_decides'),
           ('litellm_spend_log', 'by_model', 'inclusive'), ('langfuse_generation', 'by_model', 'additive'),
           ('langchain_usage_metadata', 'by_model', 'inclusive'), ('ai_sdk_anthropic', 'anthropic', 'additive'),
           ('ai_sdk', 'by_model', 'inclusive'), ('canonical', 'by_model', 'additive'), ('mooncake_trace', 'self_hosted', 'trace')
),
-- per adapter, where each field's alternatives sit in its path list ($paths_<adapter>: the adapter's
-- distinct paths in sorted order, as below): slot 3 * (field_no - 1) + alt, null where unmapped
adapter_paths as (
    select source_format, list(distinct path order by path) as paths from field_map group by source_format
),
format_slots as (
    select
        f.source_format,
        list(list_position(ap.paths, m.path) order by k.field_no, a.alt) as slots
    from formats f
    join adapter_paths ap using (source_format)
    cross join fields k
    cross join (values (1), (2), (3)) as a(alt)
    left join field_map m on m.source_format = f.source_format and m.field = k.field and m.alt = a.alt
    group by f.source_format
),
lines as (
    -- one parse of each record for every envelope-level field (null list: not JSON); the text's first
    -- character tells an object from other JSON without another parse
    select
        source_line,
        source_item,
        line,
        try(json_extract(line, ['$.custom_id', '$.result', '$.response', '$.error', '$.spend', '$.ts', '$.provider',
                                '$.model', '$.tenant', '$.app', '$.request_id', '$.id', '$.reported_cost_usd',
                                '$.request.prompt_cache_key', '$.prefix_hash', '$.response.body', '$.result.message',
                                '$.response.status_code', '$.error.code', '$.response.body.error.type', '$.result.type'])) as e
    from lines_in
),
docs as (
    select
        source_line,
        source_item,
        line as j,
        ltrim(line)[1] = '{' as is_object,
        -- an explicit JSON null is an absent key (as in the field map); the batch keys keep their nulls,
        -- which say how a batch request failed
        struct_pack(custom_id := json_present(e[1]), result := e[2], response := e[3], error := e[4], spend := json_present(e[5]),
                    ts := json_present(e[6]), provider := json_present(e[7]), model := json_present(e[8]),
                    tenant := json_present(e[9]), app := json_present(e[10]), request_id := json_present(e[11]),
                    id := json_present(e[12]), reported_cost_usd := json_present(e[13]),
                    prompt_cache_key := json_present(e[14]), prefix_hash := json_present(e[15]), response_body := e[16],
                    result_message := e[17], status_code := e[18], error_code := e[19], body_error_type := e[20],
                    result_type := e[21]) as env
    from lines
    where e is not null
),
unwrapped as (
    select
        source_line,
        source_item,
        j,
        is_object,
        env,
        case
            when not is_object or env.custom_id is null then null
            when json_type(env.result) = 'OBJECT' then 'anthropic_batch_result'
            when json_type(env.response) in ('OBJECT', 'NULL') or env.error is not null then 'openai_batch_output'
        end as batch_format,
        -- an envelope wraps a body in "response"; batch result lines and LiteLLM spend-log rows (whose
        -- "response" column is LiteLLM's copy of the body) are read as themselves
        coalesce(is_object and json_type(env.response) = 'OBJECT' and env.custom_id is null and env.spend is null, false)
            as is_envelope
    from docs
),
envelope as (
    select
        source_line,
        source_item,
        j,
        is_object,
        is_envelope,
        batch_format,
        case
            when batch_format = 'openai_batch_output' then env.response_body
            when batch_format = 'anthropic_batch_result' then env.result_message
            when is_envelope then env.response
            when is_object then j
        end as b0,
        case
            when batch_format = 'openai_batch_output' and (coalesce(env.status_code ->> '$', '') <> '200'
                                                           or json_type(env.error) not in ('NULL'))
                then 'batch request failed (status ' || coalesce(env.status_code ->> '$', 'none') || ', '
                    || coalesce(env.error_code ->> '$', env.body_error_type ->> '$', 'no error code') || '): not billed'
            when batch_format = 'anthropic_batch_result' and coalesce(env.result_type ->> '$', '') <> 'succeeded'
                then 'batch result ' || coalesce(env.result_type ->> '$', 'without a type') || ': not billed'
            when batch_format = 'anthropic_batch_result' and json_type(env.result_message) is distinct from 'OBJECT'
                then 'batch result succeeded but carries no message object'
        end as batch_error,
        case when is_envelope then env.ts end as env_ts,
        case when is_envelope then lower(env.provider ->> '$') end as env_provider,
        case when is_envelope then env.model ->> '$' end as env_model,
        case when is_envelope then env.tenant ->> '$' end as env_tenant,
        case when is_envelope then env.app ->> '$' end as env_app,
        case when is_envelope then coalesce(env.request_id ->> '$', env.id ->> '$') end as env_request_id,
        -- a batch's custom_id is unique only within its batch: the fallback id is scoped to the file
        case when batch_format is not null then 'batch:' || $source_file || ':' || (env.custom_id ->> '$') end as batch_request_id,
        case when is_envelope then env.reported_cost_usd end as env_cost,
        -- explicit prefix key: OpenAI prompt_cache_key in the logged request, else a gateway's prefix hash
        case when is_envelope then coalesce(env.prompt_cache_key ->> '$', env.prefix_hash ->> '$') end as prompt_cache_key
    from unwrapped
),
probed as (
    -- one parse of each body for every key the shape is told by (an explicit JSON null is an absent key)
    select
        e.*,
        list_transform(json_extract(e.b0, ['$.stream_error', '$.hash_ids', '$.input_length', '$.usageMetadata',
                            '$.otel_span.attributes."llm.token_count.prompt"', '$.span_attributes', '$.otel_span',
                            '$.usage.inputTokens', '$.input.inputTokenCount', '$.usage.prompt_cache_hit_tokens',
                            '$.usage.billed_units', '$.meta_info.prompt_tokens', '$.spend', '$.usageDetails', '$.usage_details',
                            '$.usage_metadata', '$.usage.promptTokens', '$.providerMetadata.anthropic', '$.num_model_requests',
                            '$.object', '$.input_uncached_tokens', '$.uncached_input_tokens', '$.starting_at',
                            '$.cache_read_input_tokens', '$.cache_creation', '$.usage.prompt_tokens', '$.usage.input_tokens',
                            '$.usage.input_tokens_details', '$.type', '$.usage.cache_read_input_tokens',
                            '$.usage.cache_creation_input_tokens', '$._stream']), lambda v: json_present(v)) as k
    from envelope e
),
shaped as (
    select
        p.* exclude (k),
        coalesce(p.env_provider, lower($provider)) as declared_provider,
        case
            when k[1] is not null then 'stream'
            when json_type(k[2]) = 'ARRAY' and k[3] is not null then 'mooncake_trace'
            when json_type(k[4]) = 'OBJECT' then 'gemini_generate_content'
            when k[5] is not null or json_type(k[6]) = 'OBJECT' then 'openinference_span'
            when json_type(k[7]) = 'OBJECT' then 'otel_genai_span'
            when k[8] is not null then 'bedrock_converse'
            when k[9] is not null then 'bedrock_invocation_log'
            when k[10] is not null then 'deepseek_chat'
            when json_type(k[11]) = 'OBJECT' then 'cohere_chat'
            when k[12] is not null then 'sglang_generate'
            when k[13] is not null then 'litellm_spend_log'
            when json_type(k[14]) = 'OBJECT' or json_type(k[15]) = 'OBJECT' then 'langfuse_generation'
            when json_type(k[16]) = 'OBJECT' then 'langchain_usage_metadata'
            when k[17] is not null then case when json_type(k[18]) = 'OBJECT' then 'ai_sdk_anthropic' else 'ai_sdk' end
            when k[19] is not null or (k[20] ->> '$') = 'organization.usage.completions.result'
                then case when k[21] is not null then 'openai_usage_bucket' else 'openai_usage_bucket_pre_2026_07' end
            when k[22] is not null and (k[23] is not null or k[24] is not null or json_type(k[25]) = 'OBJECT')
                then 'anthropic_usage_report'
            when k[22] is not null then 'canonical'
            when k[26] is not null then 'openai_chat'
            when k[27] is null then null
            when k[20] ->> '$' = 'response' or k[28] is not null then 'openai_responses'
            when k[29] ->> '$' = 'message' or k[30] is not null or k[31] is not null then 'anthropic_messages'
            when p.batch_format = 'anthropic_batch_result' then 'anthropic_messages'
            when coalesce(p.env_provider, lower($provider)) = 'anthropic' then 'anthropic_messages'
            when coalesce(p.env_provider, lower($provider)) in ('openai', 'azure', 'azure_openai') then 'openai_responses'
        end as source_format,
        json_type(k[32]) = 'BOOLEAN' as is_stream
    from probed p
),
bodies as (
    -- the object the field map reads: span attributes, a Langfuse row with its usage/cost keys under
    -- u / c, a LiteLLM row with its metadata parsed when it was stored as text; else the body itself
    select
        s.* exclude (b0),
        case
            when s.source_format = 'otel_genai_span' or (s.source_format = 'openinference_span' and json_type(s.b0, '$.otel_span') = 'OBJECT')
                then s.b0 -> '$.otel_span.attributes'
            when s.source_format = 'openinference_span' then s.b0 -> '$.span_attributes'
            when s.source_format = 'langfuse_generation' then json_object(
                'u', coalesce(s.b0 -> '$.usageDetails', s.b0 -> '$.usage_details'),
                'c', coalesce(s.b0 -> '$.costDetails', s.b0 -> '$.cost_details'),
                'model', s.b0 -> '$.model', 'id', s.b0 -> '$.id',
                'start', coalesce(s.b0 -> '$.startTime', s.b0 -> '$.start_time'),
                'end', coalesce(s.b0 -> '$.endTime', s.b0 -> '$.end_time'),
                'completion_start', coalesce(s.b0 -> '$.completionStartTime', s.b0 -> '$.completion_start_time'),
                'latency', s.b0 -> '$.latency',
                'time_to_first_token', coalesce(s.b0 -> '$.timeToFirstToken', s.b0 -> '$.time_to_first_token'),
                'calculatedTotalCost', coalesce(s.b0 -> '$.calculatedTotalCost', s.b0 -> '$.calculated_total_cost'),
                'totalCost', coalesce(s.b0 -> '$.totalCost', s.b0 -> '$.total_cost'),
                'keys', json_keys(s.b0))
            when s.source_format = 'litellm_spend_log' and json_type(s.b0, '$.metadata') = 'VARCHAR' and json_valid(s.b0 ->> '$.metadata')
                then json_merge_patch(s.b0, json_object('metadata', (s.b0 ->> '$.metadata')::json))
            else s.b0
        end as b,
        case when s.source_format in ('otel_genai_span', 'openinference_span') then s.b0 -> '$.otel_span' end as span,
        case
            when s.source_format = 'litellm_spend_log' and json_type(s.b0, '$.metadata') = 'VARCHAR' and not json_valid(s.b0 ->> '$.metadata')
                then 'LiteLLM metadata is text that is not valid JSON (its usage_object cannot be read)'
            when s.source_format = 'anthropic_usage_report' and json_type(s.b0, '$.cache_creation') not in ('OBJECT', 'NULL')
                then 'cache_creation is not an object'
        end as structure_error
    from shaped s
),
extracted as (
    select
        s.*,
        f.convention,
        f.inferred_provider,
        -- one parse of the item for the paths its adapter reads (a constant list per adapter)
        case s.source_format
            when 'openai_chat' then json_extract(s.b, $paths_openai_chat)
            when 'openai_responses' then json_extract(s.b, $paths_openai_responses)
            when 'deepseek_chat' then json_extract(s.b, $paths_deepseek_chat)
            when 'anthropic_messages' then json_extract(s.b, $paths_anthropic_messages)
            when 'anthropic_usage_report' then json_extract(s.b, $paths_anthropic_usage_report)
            when 'openai_usage_bucket' then json_extract(s.b, $paths_openai_usage_bucket)
            when 'openai_usage_bucket_pre_2026_07' then json_extract(s.b, $paths_openai_usage_bucket_pre_2026_07)
            when 'gemini_generate_content' then json_extract(s.b, $paths_gemini_generate_content)
            when 'bedrock_converse' then json_extract(s.b, $paths_bedrock_converse)
            when 'bedrock_invocation_log' then json_extract(s.b, $paths_bedrock_invocation_log)
            when 'cohere_chat' then json_extract(s.b, $paths_cohere_chat)
            when 'sglang_generate' then json_extract(s.b, $paths_sglang_generate)
            when 'otel_genai_span' then json_extract(s.b, $paths_otel_genai_span)
            when 'openinference_span' then json_extract(s.b, $paths_openinference_span)
            when 'litellm_spend_log' then json_extract(s.b, $paths_litellm_spend_log)
            when 'langfuse_generation' then json_extract(s.b, $paths_langfuse_generation)
            when 'langchain_usage_metadata' then json_extract(s.b, $paths_langchain_usage_metadata)
            when 'ai_sdk_anthropic' then json_extract(s.b, $paths_ai_sdk_anthropic)
            when 'ai_sdk' then json_extract(s.b, $paths_ai_sdk)
            when 'canonical' then json_extract(s.b, $paths_canonical)
            when 'mooncake_trace' then json_extract(s.b, $paths_mooncake_trace)
        end as v_all,
        fs.slots
    from bodies s
    left join formats f using (source_format)
    left join format_slots fs using (source_format)
),
fielded as (
    -- the first present alternative of each field (slots 3 * (field_no - 1) + 1 .. 3); an explicit JSON
    -- null counts as absent (CSV/Parquet empty cells, vLLM's "prompt_tokens_details": null)
    select
        x.* exclude (v_all, slots),
        coalesce(json_present(v_all[slots[1]]), json_present(v_all[slots[2]]), json_present(v_all[slots[3]])) as v_prompt,
        coalesce(json_present(v_all[slots[4]]), json_present(v_all[slots[5]]), json_present(v_all[slots[6]])) as v_extra_prompt,
        coalesce(json_present(v_all[slots[7]]), json_present(v_all[slots[8]]), json_present(v_all[slots[9]])) as v_uncached,
        coalesce(json_present(v_all[slots[10]]), json_present(v_all[slots[11]]), json_present(v_all[slots[12]])) as v_read,
        coalesce(json_present(v_all[slots[13]]), json_present(v_all[slots[14]]), json_present(v_all[slots[15]])) as v_hit,
        coalesce(json_present(v_all[slots[16]]), json_present(v_all[slots[17]]), json_present(v_all[slots[18]])) as v_miss,
        coalesce(json_present(v_all[slots[19]]), json_present(v_all[slots[20]]), json_present(v_all[slots[21]])) as v_write,
        coalesce(json_present(v_all[slots[22]]), json_present(v_all[slots[23]]), json_present(v_all[slots[24]])) as v_write_5m,
        coalesce(json_present(v_all[slots[25]]), json_present(v_all[slots[26]]), json_present(v_all[slots[27]])) as v_write_1h,
        coalesce(json_present(v_all[slots[28]]), json_present(v_all[slots[29]]), json_present(v_all[slots[30]])) as v_output,
        coalesce(json_present(v_all[slots[31]]), json_present(v_all[slots[32]]), json_present(v_all[slots[33]])) as v_output_extra,
        coalesce(json_present(v_all[slots[34]]), json_present(v_all[slots[35]]), json_present(v_all[slots[36]])) as v_reasoning,
        coalesce(json_present(v_all[slots[37]]), json_present(v_all[slots[38]]), json_present(v_all[slots[39]])) ->> '$' as body_model,
        coalesce(json_present(v_all[slots[40]]), json_present(v_all[slots[41]]), json_present(v_all[slots[42]])) ->> '$' as body_id,
        coalesce(json_present(v_all[slots[43]]), json_present(v_all[slots[44]]), json_present(v_all[slots[45]])) as v_epoch,
        coalesce(json_present(v_all[slots[46]]), json_present(v_all[slots[47]]), json_present(v_all[slots[48]])) ->> '$' as body_iso,
        coalesce(json_present(v_all[slots[49]]), json_present(v_all[slots[50]]), json_present(v_all[slots[51]])) ->> '$' as body_tier,
        coalesce(json_present(v_all[slots[52]]), json_present(v_all[slots[53]]), json_present(v_all[slots[54]])) as v_request_count,
        coalesce(json_present(v_all[slots[55]]), json_present(v_all[slots[56]]), json_present(v_all[slots[57]])) as v_cost,
        coalesce(json_present(v_all[slots[58]]), json_present(v_all[slots[59]]), json_present(v_all[slots[60]])) as v_total,
        lower(coalesce(json_present(v_all[slots[61]]), json_present(v_all[slots[62]]), json_present(v_all[slots[63]])) ->> '$') as body_provider,
        coalesce(json_present(v_all[slots[64]]), json_present(v_all[slots[65]]), json_present(v_all[slots[66]])) ->> '$' as body_tenant,
        coalesce(json_present(v_all[slots[67]]), json_present(v_all[slots[68]]), json_present(v_all[slots[69]])) ->> '$' as body_app,
        coalesce(json_present(v_all[slots[70]]), json_present(v_all[slots[71]]), json_present(v_all[slots[72]])) ->> '$' as context_window,
        lower(coalesce(json_present(v_all[slots[73]]), json_present(v_all[slots[74]]), json_present(v_all[slots[75]])) ->> '$') in ('true', '1', 'yes') as gateway_cache_hit,
        coalesce(json_present(v_all[slots[76]]), json_present(v_all[slots[77]]), json_present(v_all[slots[78]])) ->> '$' = 'true' as bucket_batch,
        coalesce(json_present(v_all[slots[79]]), json_present(v_all[slots[80]]), json_present(v_all[slots[81]])) as v_cost_upstream,
        coalesce(json_present(v_all[slots[82]]), json_present(v_all[slots[83]]), json_present(v_all[slots[84]])) ->> '$' = 'true' as is_byok,
        lower(coalesce(json_present(v_all[slots[85]]), json_present(v_all[slots[86]]), json_present(v_all[slots[87]])) ->> '$') as row_status,
        coalesce(json_present(v_all[slots[88]]), json_present(v_all[slots[89]]), json_present(v_all[slots[90]])) as v_start_at,
        coalesce(json_present(v_all[slots[91]]), json_present(v_all[slots[92]]), json_present(v_all[slots[93]])) as v_first_token_at,
        coalesce(json_present(v_all[slots[94]]), json_present(v_all[slots[95]]), json_present(v_all[slots[96]])) as v_end_at,
        coalesce(json_present(v_all[slots[97]]), json_present(v_all[slots[98]]), json_present(v_all[slots[99]])) as v_latency_ms,
        coalesce(json_present(v_all[slots[100]]), json_present(v_all[slots[101]]), json_present(v_all[slots[102]])) as v_latency_s,
        coalesce(json_present(v_all[slots[103]]), json_present(v_all[slots[104]]), json_present(v_all[slots[105]])) as v_ttft_ms,
        coalesce(json_present(v_all[slots[106]]), json_present(v_all[slots[107]]), json_present(v_all[slots[108]])) as v_ttft_s,
        case when x.convention = 'trace' then x.b -> '$.timestamp' end as v_trace_ms,
        case when x.convention = 'trace' then x.b -> '$.hash_ids' end as hash_ids
    from extracted x
),
identified as (
    select
        f.*,
        -- Azure deployment names map to the model they serve (source.yaml deployments)
        coalesce(
            case when list_contains($deployment_names::varchar[], coalesce(f.env_model, f.body_model, $model))
                 then ($deployment_models::varchar[])[list_position($deployment_names::varchar[], coalesce(f.env_model, f.body_model, $model))] end,
            f.env_model, f.body_model, $model) as model_reported,
        coalesce(
            f.declared_provider,
            f.body_provider,
            case when f.source_format = 'ai_sdk' then regexp_extract(f.b ->> '$.provider', '@ai-sdk/([a-z-]+)', 1) end,
            case when f.source_format = 'litellm_spend_log' and coalesce(f.body_model, '') like '%/%'
                 then lower(split_part(f.body_model, '/', 1)) end
        ) as named_provider
    from fielded f
),
providers as (
    select
        i.*,
        coalesce(
            provider_alias(i.named_provider),
            case
                when i.named_provider is not null then null
                when i.inferred_provider <> 'by_model' then i.inferred_provider
                when i.source_format = 'openai_chat' and json_type(i.b, '$.provider') = 'VARCHAR' and i.model_reported like '%/%' then 'openrouter'
                else coalesce(provider_of_model(i.model_reported), case when i.source_format = 'openai_chat' then 'openai' end)
            end
        ) as provider
    from identified i
),
validated as (
    select
        x.*,
        coalesce(
            case when not x.is_object then 'record is JSON ' || lower(json_type(x.j)) || ', not an object' end,
            x.batch_error,
            case when x.source_format = 'stream' then x.b0_stream_error end,
            case when x.source_format is null and json_type(x.b, '$.engine_log') = 'OBJECT'
                then 'engine log, not per-request usage: an engine''s prefix-cache hit rate also counts recomputed '
                    || '(preempted) requests, so it measures neither cross-request reuse nor billed tokens' end,
            case when x.source_format is null and json_type(x.b, '$.usage_api_fetch_failed') = 'VARCHAR'
                then 'usage API page not fetched: ' || (x.b ->> '$.usage_api_fetch_failed') end,  -- lib/usage_api/pages.py
            case when x.source_format is null then 'unknown shape: no recognised usage object (top-level keys: '
                || coalesce(array_to_string(json_keys(x.b)[1:12], ', '), '') || ')' end,
            x.structure_error,
            case when x.row_status = 'failure' then 'LiteLLM status failure: the provider call failed, nothing was billed' end,
            case when x.gateway_cache_hit then 'LiteLLM response-cache hit (cache_hit = true): answered by the gateway '
                || 'without a provider call, so no provider tokens were billed' end,
            case when x.provider is null and x.named_provider is not null then 'unknown provider ''' || x.named_provider
                || ''' (expected openai, azure, anthropic, gemini/google/vertex, bedrock/aws, deepseek, xai, mistral, cohere, openrouter, self_hosted/vllm/sglang)' end,
            case when x.provider is null then 'unknown provider: name one with an envelope "provider" or source.yaml provider' end,
            case when x.convention in ('inclusive', 'trace', 'total_decides') and x.v_prompt is null then 'missing prompt token count' end,
            case when x.convention = 'additive' and x.v_uncached is null then 'missing input token count' end,
            case when x.v_output is null and x.source_format <> 'gemini_generate_content' then 'missing output token count' end,
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
            case when x.v_cost is not null and try_cast(x.v_cost ->> '$' as decimal(38, 15)) is null
                then 'reported cost is not a number of USD below 10^23 (' || left(x.v_cost::varchar, 40) || ')' end,
            case when try_cast(x.v_cost ->> '$' as decimal(38, 15)) < 0 or try_cast(x.env_cost ->> '$' as decimal(38, 15)) < 0
                then 'reported cost is negative' end,
            case when x.env_cost is not null and try_cast(x.env_cost ->> '$' as decimal(38, 15)) is null
                then 'reported_cost_usd is not a number of USD (' || left(x.env_cost::varchar, 40) || ')' end,
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
    from (select p.*, p.b ->> '$.stream_error' as b0_stream_error from providers p) x
),
counted as (
    select
        v.*,
        token_value(v.v_prompt) + coalesce(token_value(v.v_extra_prompt), 0) as n_prompt_reported,
        token_value(v.v_uncached) as n_uncached_reported,
        coalesce(token_value(v.v_read), 0) as n_read,
        token_value(v.v_hit) as n_hit,
        token_value(v.v_miss) as n_miss,
        -- Anthropic: the 5m/1h split wins when present; older logs without it are all 5-minute writes
        case when v.v_write_5m is not null or v.v_write_1h is not null
             then coalesce(token_value(v.v_write_5m), 0) else coalesce(token_value(v.v_write), 0) end as n_write_5m,
        coalesce(token_value(v.v_write_1h), 0) as n_write_1h,
        token_value(v.v_write) as n_write_reported,
        -- xAI Chat Completions report reasoning beside completion_tokens, not inside (Vertex AI's Grok guide;
        -- genai-prices' x-ai chat extractor adds both); every other adapter's reasoning is inside output
        coalesce(token_value(v.v_output), 0) + coalesce(token_value(v.v_output_extra), 0)
            + case when v.source_format = 'openai_chat' and v.provider = 'xai' then coalesce(token_value(v.v_reasoning), 0) else 0 end
            as n_output,
        token_value(v.v_reasoning) as n_reasoning,
        token_value(v.v_total) as n_total
    from validated v
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
        case when c.applied_convention = 'additive' then coalesce(c.n_uncached_reported, c.n_prompt_reported)
             when c.applied_convention = 'inclusive' then c.n_prompt_reported - c.n_read - c.n_write_5m - c.n_write_1h
        end as n_uncached,
        -- the whole prompt: reported for inclusive formats and traces, the sum of the classes for additive ones
        case when c.applied_convention = 'additive'
             then coalesce(c.n_uncached_reported, c.n_prompt_reported) + c.n_read + c.n_write_5m + c.n_write_1h
             else c.n_prompt_reported
        end as n_prompt
    from resolved c
),
timed as (
    select
        c.*,
        case
            when json_type(c.env_ts) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try(to_timestamp(c.env_ts::varchar::double))
            when json_type(c.env_ts) = 'VARCHAR' then try_cast(c.env_ts ->> '$' as timestamptz)
            when c.env_ts is not null then null
            when c.convention = 'trace' then try_cast($trace_start as timestamptz) + to_milliseconds(token_value(c.v_trace_ms))
            when c.span is not null and (c.span ->> '$.startTimeUnixNano') is not null
                then try(to_timestamp(0) + to_microseconds(try_cast(try_cast(c.span ->> '$.startTimeUnixNano' as hugeint) // 1000 as bigint)))
            when json_type(c.v_epoch) in ('UBIGINT', 'BIGINT', 'DOUBLE') then try(to_timestamp(c.v_epoch::varchar::double))
            when c.body_iso is not null then try_cast(c.body_iso as timestamptz)
            when $default_ts is not null then try_cast($default_ts as timestamptz)
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
            case when t.n_write_reported is not null and (t.v_write_5m is not null or t.v_write_1h is not null)
                      and t.n_write_5m + t.n_write_1h <> t.n_write_reported
                 then 'cache write split 5m ' || t.n_write_5m || ' + 1h ' || t.n_write_1h
                      || ' does not equal the reported cache write count ' || t.n_write_reported end,
            case when t.source_format = 'langfuse_generation' and t.n_total is not null and t.n_total <> t.n_prompt + t.n_output
                 then 'usage total ' || t.n_total || ' does not equal the sum of the usage keys read (' || (t.n_prompt + t.n_output)
                      || '): a key cachemeter does not price (audio, images) carries tokens' end,
            case when t.n_reasoning > t.n_output and t.source_format <> 'gemini_generate_content'
                 then 'reasoning tokens ' || t.n_reasoning || ' exceed output tokens ' || t.n_output end
        ) as arithmetic_error
    from timed t
),
latency_fields as (
    -- the latency fields read: instants in microseconds (span times: nanoseconds // 1000), durations in
    -- ms (DECIMAL(18, 3)); null where absent or unreadable (every step is try: latency never fails a row)
    select
        c.*,
        case when c.span is not null then try_cast(try_cast(c.span ->> '$.startTimeUnixNano' as hugeint) // 1000 as bigint)
             else try(epoch_us(try_cast(c.v_start_at ->> '$' as timestamptz))) end as start_us,
        case when c.span is not null then try_cast(try_cast(c.span ->> '$.endTimeUnixNano' as hugeint) // 1000 as bigint)
             else try(epoch_us(try_cast(c.v_end_at ->> '$' as timestamptz))) end as end_us,
        case when c.span is not null then json_present(c.span -> '$.endTimeUnixNano') else c.v_end_at end as end_raw,
        try(epoch_us(try_cast(c.v_first_token_at ->> '$' as timestamptz))) as first_token_us,
        coalesce(try_cast(c.v_latency_ms ->> '$' as decimal(18, 3)),
                 try(try_cast(try_cast(c.v_latency_s ->> '$' as decimal(18, 6)) * 1000 as decimal(18, 3)))) as latency_logged_ms,
        coalesce(try_cast(c.v_ttft_ms ->> '$' as decimal(18, 3)),
                 try(try_cast(try_cast(c.v_ttft_s ->> '$' as decimal(18, 6)) * 1000 as decimal(18, 3)))) as ttft_logged_ms
    from checked c
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
),
accepted as (
    select
        c.source_line,
        c.source_item,
        coalesce(c.batch_format, c.source_format || case when c.is_stream then '_stream' else '' end) as source_format,
        c.arithmetic_error as reason,
        c.b,
        c.j,
        c.is_envelope,
        coalesce(
            c.env_request_id, c.body_id,
            case when c.span is not null then 'span-' || coalesce(c.span ->> '$.traceId', '') || '-' || coalesce(c.span ->> '$.spanId', '') end,
            case when c.source_format like '%usage_bucket%' or c.source_format = 'anthropic_usage_report'
                 then 'bucket-' || md5(c.source_format || ':' || c.b::varchar)[1:20] end,
            c.batch_request_id
        ) as request_id,  -- null: the record carries none; staged_items__create.sql mints one from its file and line
        c.ts,
        c.provider,
        c.model_reported as model,
        coalesce(c.env_tenant, c.body_tenant, $tenant, 'default') as tenant,
        coalesce(c.env_app, c.body_app, $app, 'default') as app,
        -- a Batch API result or a usage bucket of batch traffic is billed as batch whatever tier its body names
        case when c.batch_format is not null or c.bucket_batch then 'batch' else c.body_tier end as service_tier,
        c.prompt_cache_key,
        -- usage buckets stand for many requests (the Anthropic report gives no count: null = unknown)
        case when c.source_format like 'openai_usage_bucket%' or c.source_format = 'canonical'
                 then coalesce(token_value(c.v_request_count), case when c.source_format = 'canonical' then 1 end)
             when c.source_format = 'anthropic_usage_report' then null
             else 1 end as request_count,
        -- OpenRouter BYOK: usage.cost is OpenRouter's fee; the provider bills the upstream cost to the user's own key
        coalesce(try_cast(c.env_cost ->> '$' as decimal(38, 15)), try_cast(c.v_cost ->> '$' as decimal(38, 15))
            + case when c.is_byok then coalesce(try_cast(c.v_cost_upstream ->> '$' as decimal(38, 15)), 0) else 0 end) as reported_cost_usd,
        -- long-context tiers are chosen per request: a bucket's summed prompt says nothing about its requests,
        -- so it is priced at the tier of its reported context window (Anthropic: "200k-1M" -> above 200,000)
        case
            when c.source_format = 'anthropic_usage_report'
                then case when c.context_window like '200k%' then 200001 when c.context_window like '1m%' then 1000001 else 0 end
            when c.source_format like 'openai_usage_bucket%' then 0
            else c.n_prompt
        end as tier_prompt_tokens,
        c.n_prompt,
        c.n_uncached,
        c.n_read,
        c.n_write_5m,
        c.n_write_1h,
        c.n_output,
        c.n_reasoning,
        c.hash_ids,
        token_value(c.v_trace_ms) as trace_offset_ms,
        c.latency_ms,
        c.ttft_ms,
        c.latency_issue
    from clocked c
),
rejected_fields as (
    select source_line, source_item, coalesce(batch_format, source_format) as source_format, field_error as reason, b, j, is_envelope
    from validated
    where field_error is not null
),
outcomes as (
    select
        source_line, source_item, source_format, reason, b, j, is_envelope, request_id, ts, provider, model, tenant, app,
        service_tier, prompt_cache_key, request_count, reported_cost_usd, tier_prompt_tokens, n_prompt, n_uncached, n_read,
        n_write_5m, n_write_1h, n_output, n_reasoning, hash_ids, trace_offset_ms, latency_ms, ttft_ms, latency_issue
    from accepted
    union all by name
    select source_line, source_item, source_format, reason, b, j, is_envelope from rejected_fields
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
            'request_id', coalesce(case when o.is_envelope then o.j -> '$.request_id' end, o.b -> '$.id', o.j -> '$.custom_id'),
            'keys', json_keys(o.b),
            'usage', o.b -> '$.usage',
            'usageMetadata', o.b -> '$.usageMetadata',
            'usage_metadata', o.b -> '$.usage_metadata',
            'meta_info', o.b -> '$.meta_info',
            -- a provider's error message can echo the prompt: keep only its code and type
            'error', case when o.j like '%"error"%' then json_object(
                'code', coalesce(o.j -> '$.error.code', o.j -> '$.result.error.error.type'),
                'type', coalesce(o.j -> '$.error.type', o.j -> '$.result.error.type')) end,
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
        o.trace_offset_ms,
        o.source_item,
        o.request_count,
        o.reported_cost_usd,
        o.tier_prompt_tokens,
        o.latency_ms,
        o.ttft_ms,
        o.latency_issue
    from outcomes o
)
select * from final
union all by name
-- lines that are not JSON: the Python reader adds length, hash and parse position afterwards
select source_line, source_item, null as source_format, 'malformed JSON' as reason from lines where e is null;
