-- Cache TTL what-if for the UTC days [$start, $end) (table comment: sql/schema/81_marts_whatif_cache_ttl.sql).
-- Under a TTL refreshed by every read and write, a request finds its family cached exactly when the
-- family's previous cache-using request came at most the TTL before it, so the replay is a lag over
-- each family's requests (set-based; no state beyond the previous request). It reads the smaller of
-- its own span and the previous request's span and writes the rest. Rows from the day before the
-- window give the window's first requests their predecessor (the longest TTL, 1 hour, is shorter).
insert into marts.whatif_cache_ttl by name
with
options (ttl_option, ttl_seconds, uses_1h_price) as (
    values ('5m', 300, false), ('1h', 3600, true)
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
        lag(ts) over family_order as previous_ts,
        lag(span_tokens) over family_order as previous_span_tokens
    from cached
    window family_order as (partition by prefix_family, provider, model, tenant, app order by ts, request_id)
),
replayed as (
    select
        p.*,
        o.ttl_option,
        o.uses_1h_price,
        case when p.previous_ts is not null and p.ts - p.previous_ts <= to_seconds(o.ttl_seconds)
             then least(p.span_tokens, p.previous_span_tokens) else 0 end as option_read_tokens
    from with_previous p
    cross join options o
    where p.day >= $start
),
priced as (
    select
        *,
        -- what the cache classes cost now, replaced by what they would cost under the option
        cost_usd
            - usd(cache_read_tokens, cache_read_per_mtok)
            - usd(cache_write_5m_tokens, cache_write_5m_per_mtok)
            - usd(cache_write_1h_tokens, cache_write_1h_per_mtok)
            + usd(option_read_tokens, cache_read_per_mtok)
            + usd(span_tokens - option_read_tokens,
                  case when uses_1h_price then cache_write_1h_per_mtok else cache_write_5m_per_mtok end)
            as option_cost_usd
    from replayed
)
select
    day, prefix_family, provider, model, tenant, app, ttl_option,
    case when sum(cache_write_1h_tokens) > 0 then '1h' else '5m' end as current_ttl,
    sum(request_count)::bigint as requests,
    sum(span_tokens)::bigint as cached_span_tokens,
    sum(option_read_tokens)::bigint as cache_read_tokens,
    sum(span_tokens - option_read_tokens)::bigint as cache_write_tokens,
    sum(cost_usd)::decimal(38, 15) as cost_now_usd,
    sum(option_cost_usd)::decimal(38, 15) as cost_usd,
    (sum(cost_usd) - sum(option_cost_usd))::decimal(38, 15) as saving_usd
from priced
group by day, prefix_family, provider, model, tenant, app, ttl_option;
