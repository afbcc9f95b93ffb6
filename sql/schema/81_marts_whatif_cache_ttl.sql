-- marts.whatif_cache_ttl: the cache TTL what-if (grain: day, prefix_family, provider, model, tenant,
-- app, ttl_option). Each request that read or wrote the cache is replayed in time order within its
-- family under 5-minute and 1-hour writes (the retention options the price book prices apart; a read
-- refreshes the TTL), anchored on the log: where the option keeps the family's entry alive exactly when
-- the current TTL does, the request reads what it read, so the current TTL's row costs what the
-- requests cost now at list rates (saving 0; on a family-day that wrote both kinds of entry, current_ttl
-- is '1h' and its row prices every write at the 1-hour price); where a longer option keeps alive an entry that has expired now, it reads the smaller of
-- its span and the previous request's, times the family-day's match rate (the share of what its
-- requests inside the current TTL could read that they did read; 1 when none came inside it, near 0 for
-- a rotating preamble); where a shorter option lets a live entry expire, it reads nothing. The rest of
-- its span it writes at the option's write price. Only families whose price rows price 1-hour writes
-- differently from 5-minute ones are covered, per-request rows only (usage buckets carry no request
-- times); other requests cost the same under every option. Money is USD, exact DECIMAL; priced from
-- each row's own applied prices (core.usage_costs).
create table if not exists marts.whatif_cache_ttl (
    day                 date,            -- UTC day
    prefix_family       varchar,         -- the family key (see core.usage.prefix_family)
    provider            varchar,         -- cachemeter provider name
    model               varchar,         -- model as reported
    tenant              varchar,         -- owning tenant
    app                 varchar,         -- calling application
    ttl_option          varchar,         -- the retention replayed: '5m' or '1h'
    current_ttl         varchar,         -- the family's TTL that day: '1h' if it wrote any 1-hour entries, or wrote none and read an entry more than 5 minutes after the previous request; else '5m'
    requests            bigint,          -- requests that read or wrote the cache (sum of request_count)
    cached_span_tokens  bigint,          -- tokens read or written now (cache read + cache write tokens)
    cache_read_tokens   bigint,          -- tokens read from cache under the option
    cache_write_tokens  bigint,          -- tokens written to cache under the option (at its write price)
    cost_now_usd        decimal(38, 15), -- USD for these requests as logged, at list rates (core.usage_costs.list_cost_usd), as the option is priced
    cost_usd            decimal(38, 15), -- USD the same requests would cost under the option
    saving_usd          decimal(38, 15)  -- USD, cost_now_usd - cost_usd (positive: switching pays)
);
