-- Cache TTL what-if for the UTC days [$start, $end) (table comment: sql/schema/81_marts_whatif_cache_ttl.sql).
-- Under a TTL refreshed by every read and write, a request finds its family cached exactly when the
-- family's previous cache-using request came at most the TTL before it, so the replay is a lag over
-- each family's requests (set-based; no state beyond the previous request). It reads the smaller of
-- its own span and the previous request's span and writes the rest. Rows from the day before the
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
        u.request_id, u.ts, u.day, u.prefix_family, u.provider, u.model, u.tenant, u.app, u.request_count,
        u.cache_read_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens,
        u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens as span_tokens,
        c.list_cost_usd as cost_usd,  -- list rates, as the option is priced (not a bill that differs from them)
        c.cache_read_per_mtok, c.cache_write_5m_per_mtok, c.cache_write_1h_per_mtok
    from core.usage u
    join core.usage_costs c using (request_id, day)
    where u.day >= $start::date - 1 and u.day < $end
      and c.priced
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
    window family_order as (partition by prefix_family, provider, model, tenant, app order by ts, request_id)
),
-- token sums per applied price, both options' reads side by side (no row per option): usd() is exact and
-- linear at these scales (tokens x a DECIMAL(18, 9) price x 10^-6 has at most 15 decimals, so nothing is
-- rounded), so pricing each group's sums equals summing each request's prices, for a few rows, not one a request
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
        sum(case when gap_us <= 300 * 1000000::bigint
                 then least(span_tokens, previous_span_tokens) else 0 end) as read_5m_tokens,
        sum(case when gap_us <= 3600 * 1000000::bigint
                 then least(span_tokens, previous_span_tokens) else 0 end) as read_1h_tokens
    from with_previous
    where day >= $start
    group by all
),
priced as (
    select
        g.*,
        o.ttl_option,
        case when o.uses_1h_price then g.read_1h_tokens else g.read_5m_tokens end as option_read_tokens,
        -- what the cache classes cost now, replaced by what they would cost under the option
        g.cost_usd
            - usd(g.cache_read_tokens, g.cache_read_per_mtok)
            - usd(g.cache_write_5m_tokens, g.cache_write_5m_per_mtok)
            - usd(g.cache_write_1h_tokens, g.cache_write_1h_per_mtok)
            + usd(option_read_tokens, g.cache_read_per_mtok)
            + usd(g.span_tokens - option_read_tokens,
                  case when o.uses_1h_price then g.cache_write_1h_per_mtok else g.cache_write_5m_per_mtok end)
            as option_cost_usd
    from per_price g
    cross join options o
)
select
    day, prefix_family, provider, model, tenant, app, ttl_option,
    case when sum(cache_write_1h_tokens) > 0 then '1h' else '5m' end as current_ttl,
    sum(requests)::bigint as requests,
    sum(span_tokens)::bigint as cached_span_tokens,
    sum(option_read_tokens)::bigint as cache_read_tokens,
    sum(span_tokens - option_read_tokens)::bigint as cache_write_tokens,
    sum(cost_usd)::decimal(38, 15) as cost_now_usd,
    sum(option_cost_usd)::decimal(38, 15) as cost_usd,
    (sum(cost_usd) - sum(option_cost_usd))::decimal(38, 15) as saving_usd
from priced
group by day, prefix_family, provider, model, tenant, app, ttl_option;
