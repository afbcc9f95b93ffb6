-- core.usage: the canonical usage row, one per request (or usage bucket), partitioned by UTC day.
-- Token classes are disjoint and sum to prompt_tokens (ARCHITECTURE section 3; provider field
-- meanings from reference/providers.md section 0). request_id is unique: a repeated id is quarantined
-- as a duplicate at staging time. Staging writes each log file's accepted records here directly (a
-- changed file's rows are replaced in one transaction), so a day is stored once; the daily core/usage
-- asset re-resolves price_model for its window and checks it.
create table if not exists core.usage (
    request_id            varchar,      -- provider id (envelope request_id, body id), else a stable hash of file + line
    ts                    timestamptz,  -- request time (UTC): envelope ts, else the body's own time, else trace_start + offset
    day                   date,         -- UTC day of ts; the partition key
    source_format         varchar,      -- adapter that read the record (openai_chat, anthropic_messages, otel_genai_span, litellm_spend_log, ...: docs/formats.md)
    provider              varchar,      -- openai, azure, anthropic, gemini, bedrock, deepseek, xai, mistral, cohere, openrouter, self_hosted
    model                 varchar,      -- model id as reported (envelope model, body model, or source.yaml default)
    tenant                varchar,      -- owning tenant (envelope or source.yaml; 'default' when absent)
    app                   varchar,      -- calling application (envelope or source.yaml; 'default' when absent)
    price_model           varchar,      -- catalogue model id after normalisation (genai-prices id), else lower(model); set at staging
    request_count         bigint,       -- requests this row stands for: 1 for per-request logs, N for usage buckets
    is_batch              boolean,      -- billed through a batch API (service_tier = 'batch')
    service_tier          varchar,      -- provider service tier as reported (standard, default, flex, priority, batch), else null
    prefix_family         varchar,      -- hash naming the shared opening (explicit key, trace block chain, else the provider/model/tenant/app series)
    prompt_tokens         bigint,       -- tokens; = uncached_input + cache_read + cache_write_5m + cache_write_1h
    uncached_input_tokens bigint,       -- tokens billed at the base input rate
    cache_read_tokens     bigint,       -- tokens served from the prompt cache (cache hits)
    cache_write_5m_tokens bigint,       -- tokens written to the cache with the default (5-minute class) TTL
    cache_write_1h_tokens bigint,       -- tokens written to the cache with the long (1-hour class) TTL
    output_tokens         bigint,       -- all billed output tokens, reasoning included
    reasoning_tokens      bigint,       -- of which reasoning/thinking tokens (informational subset of output_tokens)
    source_file           varchar,      -- log file, relative to the logs root
    source_line           bigint        -- 1-based line (or array element) in source_file
);
