-- Aggregate core.usage_priced into marts.series_days for the days $days (series_days__days.sql: the window's, and
-- any of its lookback without series rows yet), so the alert rules always find their baseline. $first and $last are the
-- first and the last of them (the window's first and last days on a nightly run): every scan is bounded by them as
-- DATE parameters, so a day filter reaches both tables of core.usage_priced and a nightly run reads the new day's rows, not the lookback's
-- (at 30 days of 200,000 requests a bound computed in SQL left the cost table's scan reading every day of
-- history: 0.50 s against 0.09 s for the day alone).
insert into marts.series_days by name
with
window_days as (
    -- the days to aggregate ($days, series_days__days.sql; $first and $last the first and the last). Each aggregate below reads its own
    -- columns of those days from the tables (only the series' sums need the cost rows): a CTE of the joined rows, read
    -- three times, was materialised, and its three scans cost more than the tables' (4.8-5.1 s against 2.0-2.4 s for a
    -- 5M-request day; the same rows). Every usage row has its one cost row (checks/usage_costs__rows_not_priced_once.sql),
    -- so reading core.usage alone there keeps the rows the join kept.
    select unnest($days::date[]) as day
),
read_values as (
    -- how often the day's most common cache-read size occurs among its hits, and that size (the larger on a tie)
    select day, provider, model, tenant, app, max(hits_with_value) as top_read_count,
           arg_max(cache_read_tokens, (hits_with_value, cache_read_tokens)) as top_read_tokens
    from (
        select day, provider, model, tenant, app, cache_read_tokens, count(*) as hits_with_value
        from core.usage
        where day >= $first and day <= $last
            and day in (select day from window_days) and cache_read_tokens > 0
        group by all
    )
    group by all
),
series as (
    select
        d.day, d.provider, d.model, d.tenant, d.app,
        sum(d.request_count) as requests,
        sum(d.prompt_tokens) as prompt_tokens,
        sum(d.cache_read_tokens) as cache_read_tokens,
        sum(d.read_discount_usd) as read_discount_usd,
        count(*) filter (where d.cache_read_tokens > 0) as hits
    from core.usage_priced d
    where d.day >= $first and d.day <= $last
        and d.day in (select day from window_days)
    group by all
),
-- What needs a DISTINCT or a median is aggregated apart, each over the rows it counts: in the roll-up above, two
-- DISTINCT aggregates made DuckDB aggregate every row of the days its slower way (bench/README.md, "A DISTINCT
-- aggregate taken apart"). The logged bodies' openings and offsets: rows that logged a request body only.
bodies as (
    select day, provider, model, tenant, app,
           count(rendered_chars) as body_rows,
           count(distinct coalesce(opening_hashes[4], opening_hashes[-1])) as distinct_openings,
           median(divergence_offset_chars) as median_offset
    from core.usage
    where day >= $first and day <= $last
        and day in (select day from window_days)
        and (rendered_chars is not null or opening_hashes is not null or divergence_offset_chars is not null)
    group by all
),
hit_prompts as (
    -- distinct prompt sizes among the hits, as the distinct (series, size) pairs counted
    select day, provider, model, tenant, app, count(prompt_tokens) as distinct_hit_prompts
    from (
        select distinct day, provider, model, tenant, app, prompt_tokens
        from core.usage
        where day >= $first and day <= $last
            and day in (select day from window_days) and cache_read_tokens > 0
    )
    group by all
),
common_spans as (
    -- the day's most common span shape; a tie goes to the greater shape text, so reruns agree
    -- (DuckDB's mode() breaks ties by hash-table order, which differs from run to run)
    select day, provider, model, tenant, app,
           arg_max(divergence_span, (rows_with_span, divergence_span)) as common_span
    from (
        select day, provider, model, tenant, app, divergence_span, count(*) as rows_with_span
        from core.usage
        where day >= $first and day <= $last
            and day in (select day from window_days) and divergence_span is not null
        group by all
    )
    group by all
),
final as (
    -- each part joined on its series, a null model (or tenant, app) matching a null one
    select s.*, coalesce(b.body_rows, 0) as body_rows, coalesce(b.distinct_openings, 0) as distinct_openings,
           b.median_offset, coalesce(h.distinct_hit_prompts, 0) as distinct_hit_prompts,
           c.common_span, r.top_read_count, r.top_read_tokens
    from series s
    left join bodies b on (b.day, b.provider, b.model, b.tenant, b.app) is not distinct from (s.day, s.provider, s.model, s.tenant, s.app)
    left join hit_prompts h on (h.day, h.provider, h.model, h.tenant, h.app) is not distinct from (s.day, s.provider, s.model, s.tenant, s.app)
    left join common_spans c on (c.day, c.provider, c.model, c.tenant, c.app) is not distinct from (s.day, s.provider, s.model, s.tenant, s.app)
    left join read_values r on (r.day, r.provider, r.model, r.tenant, r.app) is not distinct from (s.day, s.provider, s.model, s.tenant, s.app)
)
select * from final;
