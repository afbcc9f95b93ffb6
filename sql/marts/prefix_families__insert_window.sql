-- Roll usage up to prefix families per UTC day for [$start, $end), with each family's own trailing
-- $alert_baseline_days-day token hit rate and what falling below it cost (USD, DECIMAL).
insert into marts.prefix_families by name
with
-- distinct openings per family and day, of the rows that logged a request body (the others have neither column): a
-- DISTINCT aggregate in the roll-up below made DuckDB aggregate every row of the window its slower way (0.9 s of
-- 2.3 s at 5M rows without bodies, bench/README.md "A DISTINCT aggregate taken apart")
openings as (
    select
        u.day, u.prefix_family, u.provider, u.model, u.tenant, u.app,
        count(u.rendered_chars) as rendered_rows,
        count(distinct coalesce(u.opening_hashes[4], u.opening_hashes[-1])) as distinct_openings
    from core.usage_priced u
    where u.day >= $start and u.day < $end and (u.rendered_chars is not null or u.opening_hashes is not null)
    group by all
),
window_days as (
    select
        u.day, u.prefix_family, u.provider, u.model, u.tenant, u.app,
        sum(u.request_count) as requests,
        sum(u.prompt_tokens) as prompt_tokens,
        sum(u.cache_read_tokens) as cache_read_tokens,
        sum(u.cost_usd) as cost_usd,
        sum(u.savings_usd) as savings_usd,
        sum(u.cache_write_premium_usd) as cache_write_premium_usd,
        count(*) filter (where u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens > 0) as cached_rows,
        sum(u.request_count) filter (where u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens > 0)
            as cached_requests,
        sum(u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens)
            filter (where u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens > 0) as cached_span_tokens,
        -- what the report's TTFT estimate prices (sql/whatif/ttft__family_usage.sql counts the same way)
        coalesce(sum(coalesce(u.request_count, 1)) filter (where u.ttft_ms is null and u.cache_read_tokens > 0), 0)
            as unmeasured_hit_requests,
        coalesce(sum(u.cache_read_tokens) filter (where u.ttft_ms is null), 0) as unmeasured_cache_read_tokens,
        sum(u.read_discount_usd) as read_discount_usd
    from core.usage_priced u
    where u.day >= $start and u.day < $end
    group by all
),
family_days as (
    -- the window's days from the priced rows; the trailing baseline days from this mart's own rows,
    -- already aggregated by earlier runs (a nightly run reads the new day's requests only)
    select w.*, case when o.rendered_rows > 0 then o.distinct_openings end as distinct_openings
    from window_days w
    left join openings o
        on (o.day, o.prefix_family, o.provider, o.model, o.tenant, o.app)
        is not distinct from (w.day, w.prefix_family, w.provider, w.model, w.tenant, w.app)
    union all by name
    select
        p.day, p.prefix_family, p.provider, p.model, p.tenant, p.app, p.requests, p.distinct_openings,
        p.prompt_tokens, p.cache_read_tokens, p.cost_usd, p.savings_usd
    from marts.prefix_families p
    where p.day >= ($start::date - to_days($alert_baseline_days))::date and p.day < $start
),
with_baseline as (
    select
        f.*,
        f.cache_read_tokens / nullif(f.prompt_tokens, 0) as token_hit_rate,
        sum(f.cache_read_tokens) over trailing_days / nullif(sum(f.prompt_tokens) over trailing_days, 0) as baseline_hit_rate
    from family_days f
    window trailing_days as (
        partition by f.prefix_family, f.provider, f.model, f.tenant, f.app
        order by f.day
        range between to_days($alert_baseline_days) preceding and interval 1 day preceding
    )
),
final as (
    select
        day, prefix_family, provider, model, tenant, app, requests::bigint as requests, distinct_openings,
        prompt_tokens::bigint as prompt_tokens, cache_read_tokens::bigint as cache_read_tokens, token_hit_rate,
        coalesce(cost_usd, 0)::decimal(38, 15) as cost_usd,
        coalesce(savings_usd, 0)::decimal(38, 15) as savings_usd,
        cache_write_premium_usd::decimal(38, 15) as cache_write_premium_usd,
        cached_rows, cached_requests::bigint as cached_requests, cached_span_tokens::bigint as cached_span_tokens,
        unmeasured_hit_requests::bigint as unmeasured_hit_requests,
        unmeasured_cache_read_tokens::bigint as unmeasured_cache_read_tokens,
        baseline_hit_rate,
        cast(greatest(coalesce(baseline_hit_rate - token_hit_rate, 0), 0)::decimal(18, 9)
             * coalesce(read_discount_usd, 0) as decimal(38, 15)) as lost_savings_usd
    from with_baseline
    where day >= $start and day < $end
)
select * from final;
