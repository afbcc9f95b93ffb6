-- marts.prefix_families: each prefix family's day (grain: day, prefix_family, provider, model,
-- tenant, app). A family is the key that says "these requests share an opening": an explicit key,
-- a trace block chain, a request-body fingerprint, else the series (see core.usage.prefix_family).
create table if not exists marts.prefix_families (
    day                date,            -- UTC day
    prefix_family      varchar,          -- the family key: 'key:', 'blk:', 'fp:' or 'series:' + hash
    provider           varchar,          -- cachemeter provider name
    model              varchar,          -- model as reported
    tenant             varchar,          -- owning tenant
    app                varchar,          -- calling application
    requests           bigint,          -- requests (sum of request_count)
    distinct_openings  bigint,          -- distinct leading blocks (first 2,048 rendered characters) when bodies are logged, else null
    prompt_tokens      bigint,          -- tokens
    cache_read_tokens  bigint,          -- tokens
    token_hit_rate     double,          -- cache_read_tokens / prompt_tokens (0..1)
    cost_usd           decimal(38, 15), -- USD billed (priced rows)
    savings_usd        decimal(38, 15), -- USD saved by caching (priced rows; negative when write premiums exceed reads)
    baseline_hit_rate  double,          -- the family's token hit rate over its trailing baseline days (null: no history)
    lost_savings_usd   decimal(38, 15)  -- USD: max(baseline - observed, 0) x prompt tokens x (input - cache read price)
);
