-- Cache TTL what-if for the UTC days [$start, $end) (table comment: sql/schema/81_marts_whatif_cache_ttl.sql).
-- Under a TTL refreshed by every read and write, a request's family entry is alive exactly when the
-- family's previous cache-using request came at most the TTL before it, so the replay is a lag over
-- each family's requests (set-based; no state beyond the previous request), and each request falls in
-- one of three gap buckets: at most 5 minutes, 5 minutes to 1 hour, more than 1 hour (or no previous
-- request). The replay is anchored on the log: where the option keeps the entry alive exactly when the
-- current TTL does, the request reads what it read (so the current TTL's option costs what it costs now,
-- saving 0, on a family-day that wrote one kind of entry; on one that wrote both, current_ttl is '1h' and its
-- row prices every write at the 1-hour price). Where a longer option keeps alive an entry that has expired now, the request reads the
-- smaller of its own span and the previous request's span, scaled by the family-day's match rate: of
-- what its requests inside the current TTL could have read, the share they did read (1 when none came
-- inside it). A family whose opening changes on every request (a rotating preamble: it writes although
-- its entry is alive) has a match rate near 0, and a longer TTL buys it nothing. Where a shorter option
-- lets an entry expire that is alive now, the request reads nothing. Rows from the day before the
-- window give the window's first requests their predecessor (the longest TTL, 1 hour, is shorter).
insert into marts.whatif_cache_ttl by name
with
-- the retention options replayed (the two TTLs the price book prices apart; the reads per option below
-- use the same 300 and 3600 seconds)
options (ttl_option, uses_1h_price) as (
    values ('5m', false), ('1h', true)
),
cached as (
    select
        u.request_id, u.ts, u.source_file, u.source_line, u.day, u.prefix_family, u.provider, u.model, u.tenant, u.app, u.request_count,
        u.cache_read_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens,
        u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens as span_tokens,
        c.list_cost_usd as cost_usd,  -- list rates, as the option is priced (not a bill that differs from them)
        c.cache_read_per_mtok, c.cache_write_5m_per_mtok, c.cache_write_1h_per_mtok,
        -- a request its price left unpriced (e.g. a --prices row without a read price) is still a request of
        -- the family: it is the previous request of the next one, and only its own sums are left out below
        c.priced
    from core.usage u
    join core.usage_costs c using (request_id, day)
    where u.day >= $start::date - 1 and u.day < $end
      and u.request_count = 1  -- a usage bucket (N requests in one row) has no request times to replay
      and c.cache_write_1h_per_mtok is distinct from c.cache_write_5m_per_mtok
      and c.cache_write_1h_per_mtok is not null and c.cache_write_5m_per_mtok is not null
      and u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens > 0
),
with_previous as (
    select
        *,
        -- microseconds since the previous request, in integers: subtracting TIMESTAMPTZ values builds an
        -- INTERVAL through the time-zone calendar, measured at 2.5x the cost of the window itself
        epoch_us(ts) - lag(epoch_us(ts)) over family_order as gap_us,
        lag(span_tokens) over family_order as previous_span_tokens
    from cached
    -- requests logged at the same time in their log order (times are often whole seconds, ids random)
    window family_order as (partition by prefix_family, provider, model, tenant, app
                            order by ts, source_file, source_line, request_id)
),
bucketed as (
    select
        *,
        case when gap_us <= 300 * 1000000::bigint then 0
             when gap_us <= 3600 * 1000000::bigint then 1
             else 2 end as gap_bucket,  -- 0: at most 5 minutes, 1: up to 1 hour, 2: longer or first
        coalesce(least(span_tokens, previous_span_tokens), 0) as could_read_tokens
    from with_previous
    where day >= $start and priced
),
-- token sums per applied price, both options side by side (no row per option): usd() is exact and linear at
-- these scales (tokens x a DECIMAL(18, 9) price x 10^-6 has at most 15 decimals, so nothing is rounded), so
-- pricing each group's sums equals summing each request's prices, for a few rows, not one a request
per_price as (
    select
        day, prefix_family, provider, model, tenant, app,
        cache_read_per_mtok, cache_write_5m_per_mtok, cache_write_1h_per_mtok,
        sum(request_count) as requests,
        sum(span_tokens) as span_tokens,
        sum(cache_read_tokens) as cache_read_tokens,
        sum(cache_write_5m_tokens) as cache_write_5m_tokens,
        sum(cache_write_1h_tokens) as cache_write_1h_tokens,
        sum(cost_usd) as cost_usd,
        -- bucket 1's reads; what buckets 0 and 1 could have read and read of it; what bucket 1 could have read on top
        sum(case when gap_bucket = 1 then cache_read_tokens else 0 end) as read_1,
        sum(case when gap_bucket = 0 then could_read_tokens else 0 end) as could_0,
        sum(case when gap_bucket = 1 then could_read_tokens else 0 end) as could_1,
        sum(case when gap_bucket = 0 then least(cache_read_tokens, could_read_tokens) else 0 end) as matched_0,
        sum(case when gap_bucket = 1 then least(cache_read_tokens, could_read_tokens) else 0 end) as matched_1,
        sum(case when gap_bucket = 1 then greatest(could_read_tokens - cache_read_tokens, 0) else 0 end) as more_1
    from bucketed
    group by all
),
with_current as (
    select
        *,
        -- the current TTL of the family-day: 1 hour if it wrote any 1-hour entries, or wrote none and read an
        -- entry more than 5 minutes after the previous request (which only a 1-hour entry outlives)
        sum(cache_write_1h_tokens) over family_day > 0
            or (sum(cache_write_5m_tokens) over family_day = 0 and sum(read_1) over family_day > 0) as now_1h
    from per_price
    window family_day as (partition by day, prefix_family, provider, model, tenant, app)
),
per_family_day as (
    select
        *,
        -- the match rate's parts, inside the current TTL (5 minutes: bucket 0; 1 hour: buckets 0 and 1)
        sum(matched_0 + case when now_1h then matched_1 else 0 end) over family_day as matched_day,
        sum(could_0 + case when now_1h then could_1 else 0 end) over family_day as could_day
    from with_current
    window family_day as (partition by day, prefix_family, provider, model, tenant, app)
),
options_read as (
    select
        g.*,
        o.ttl_option,
        o.uses_1h_price,
        case when g.could_day = 0 then 1 else g.matched_day / g.could_day end as match_rate,
        case
            -- the option is the current TTL: what was read
            when o.uses_1h_price = g.now_1h then g.cache_read_tokens
            -- 5 minutes now, 1 hour replayed: bucket 1's expired entries stay alive, at the match rate
            -- (half up to whole tokens, exact integer arithmetic)
            when o.uses_1h_price then g.cache_read_tokens + case
                when g.could_day = 0 then g.more_1
                else (2 * g.more_1::hugeint * g.matched_day + g.could_day) // (2 * g.could_day::hugeint)
            end
            -- 1 hour now, 5 minutes replayed: bucket 1's entries expire, so it reads nothing
            else g.cache_read_tokens - g.read_1
        end::bigint as option_read_tokens
    from per_family_day g
    cross join options o
),
priced as (
    select
        g.*,
        -- what the cache classes cost now, replaced by what they would cost under the option
        g.cost_usd
            - usd(g.cache_read_tokens, g.cache_read_per_mtok)
            - usd(g.cache_write_5m_tokens, g.cache_write_5m_per_mtok)
            - usd(g.cache_write_1h_tokens, g.cache_write_1h_per_mtok)
            + usd(g.option_read_tokens, g.cache_read_per_mtok)
            + usd(g.span_tokens - g.option_read_tokens,
                  case when g.uses_1h_price then g.cache_write_1h_per_mtok else g.cache_write_5m_per_mtok end)
            as option_cost_usd
    from options_read g
)
select
    day, prefix_family, provider, model, tenant, app, ttl_option,
    case when bool_or(now_1h) then '1h' else '5m' end as current_ttl,
    sum(requests)::bigint as requests,
    any_value(match_rate)::double as match_rate,  -- one value per family-day
    sum(span_tokens)::bigint as cached_span_tokens,
    sum(option_read_tokens)::bigint as cache_read_tokens,
    sum(span_tokens - option_read_tokens)::bigint as cache_write_tokens,
    sum(cost_usd)::decimal(38, 15) as cost_now_usd,
    sum(option_cost_usd)::decimal(38, 15) as cost_usd,
    (sum(cost_usd) - sum(option_cost_usd))::decimal(38, 15) as saving_usd
from priced
group by day, prefix_family, provider, model, tenant, app, ttl_option;
