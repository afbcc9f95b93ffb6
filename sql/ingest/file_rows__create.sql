-- file_rows: per-file scratch table (connection-local) holding one normalised row per record,
-- accepted (reason is null) or rejected (reason says why), before they are published to
-- core.usage and core.quarantine in one transaction.
create or replace temp table file_rows (
    source_line           bigint,
    source_format         varchar,
    reason                varchar,
    raw_excerpt           varchar,
    request_id            varchar,
    ts                    timestamptz,
    provider              varchar,
    model                 varchar,
    tenant                varchar,
    app                   varchar,
    service_tier          varchar,
    inference_geo         varchar,  -- where inference ran as reported, lower-cased (Anthropic: global, us), else null
    speed                 varchar,  -- the speed the request ran at as reported, lower-cased (Anthropic: standard, fast), else null
    prefix_family         varchar,
    prompt_tokens         bigint,
    uncached_input_tokens bigint,
    cache_read_tokens     bigint,
    cache_write_5m_tokens bigint,
    cache_write_1h_tokens bigint,
    output_tokens         bigint,
    reasoning_tokens      bigint,
    hash_ids              varchar,  -- block-hash chain of a trace record (JSON array), for the cache replay
    trace_offset_ms       bigint,   -- trace records: arrival in ms from trace start
    source_item           integer default 0,  -- 0: the whole line; n: the n-th usage item of a container line
    request_count         bigint,   -- requests the row stands for (usage buckets: many; null = not reported)
    reported_cost_usd     decimal(38, 15),  -- USD the source says was billed (gateway or tracing tool), else null
    tier_prompt_tokens    bigint,   -- tokens: per-request prompt size that selects a long-context price tier
    latency_ms            decimal(18, 3),  -- ms, request start to end (null: not logged or invalid)
    ttft_ms               decimal(18, 3),  -- ms, request start to first token (null: not logged or invalid)
    latency_issue         varchar,  -- why a logged latency field was left null, else null
    usage_issue           varchar,  -- what the token classes may miss (write split missing, unmapped usage keys), else null
    unmapped_usage        json      -- body path -> number of each usage key no token class maps, else null
);
