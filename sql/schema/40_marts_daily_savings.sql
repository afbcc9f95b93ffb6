-- marts.daily_savings: what caching saved per UTC day and series (grain: day, provider, model,
-- tenant, app). Tokens are counts; money is USD DECIMAL summed from core.usage_costs (unpriced
-- requests add tokens but no cost, and are counted in unpriced_requests).
create table if not exists marts.daily_savings (
    day                   date,            -- UTC day
    provider              varchar,       -- cachemeter provider name
    model                 varchar,         -- model as reported
    tenant                varchar,       -- owning tenant
    app                   varchar,       -- calling application
    requests              bigint,          -- requests (sum of request_count)
    prompt_tokens         bigint,          -- tokens
    uncached_input_tokens bigint,          -- tokens
    cache_read_tokens     bigint,          -- tokens
    cache_write_tokens    bigint,          -- tokens, 5-minute and 1-hour writes together
    output_tokens         bigint,          -- tokens
    token_hit_rate        double,          -- cache_read_tokens / prompt_tokens (0..1), the figure that decides the bill
    request_hit_rate      double,          -- hit requests / eligible requests (0..1) among rows of one request each (a usage bucket's requests are not told apart), null when none
    cost_usd              decimal(38, 15), -- USD billed (priced rows)
    no_cache_cost_usd     decimal(38, 15), -- USD without caching (priced rows)
    savings_usd           decimal(38, 15), -- USD, no_cache_cost_usd - cost_usd
    unpriced_requests     bigint           -- requests with no price (their cost is not in the sums)
);
