-- hit_rate_drop: a (provider, model, tenant, app) series whose token hit rate on a day of
-- [$start, $end) falls at least $alert_min_drop (absolute, 0..1) below its trailing $alert_baseline_days-day
-- baseline (cache reads / prompt tokens over the preceding days that had traffic), when the day has
-- at least $alert_min_requests requests and the baseline at least $alert_min_requests requests.
-- lost_savings_usd = (baseline - observed) x prompt tokens x (input price - cache read price),
-- from the day's priced rows (ARCHITECTURE section 5). Severity is critical for a drop of
-- $alert_critical_drop or more. Muted while a rotating_preamble incident of the same series (found first)
-- is under $alert_baseline_days days old: that alert already names the cause.
insert into marts.cache_alerts by name
with
series_days as (
    -- per-day aggregates (marts.series_days, written just before the rules run)
    select day, provider, model, tenant, app, requests, prompt_tokens, cache_read_tokens, read_discount_usd
    from marts.series_days
    where day >= $start::date - to_days($alert_baseline_days) and day < $end
),
with_baseline as (
    select
        d.*,
        d.cache_read_tokens / nullif(d.prompt_tokens, 0) as observed,
        sum(d.cache_read_tokens) over trailing_days / nullif(sum(d.prompt_tokens) over trailing_days, 0) as baseline,
        sum(d.requests) over trailing_days as baseline_requests
    from series_days d
    window trailing_days as (
        partition by d.provider, d.model, d.tenant, d.app
        order by d.day
        range between to_days($alert_baseline_days) preceding and interval 1 day preceding
    )
),
final as (
    select
        md5(concat_ws('|', 'hit_rate_drop', provider, coalesce(model, ''), tenant, app, '', day::varchar)) as alert_id,
        day,
        'hit_rate_drop' as rule,
        case when baseline - observed >= $alert_critical_drop then 'critical' else 'warning' end as severity,
        provider,
        model,
        tenant,
        app,
        null::varchar as prefix_family,
        observed,
        baseline,
        cast((baseline - observed)::decimal(18, 9) * read_discount_usd as decimal(38, 15)) as lost_savings_usd,
        format('{} {} ({}/{}): token hit rate {:.1f}% vs {:.1f}% over the previous {} days; about ${:.2f} of savings lost',
               provider, coalesce(model, '?'), tenant, app, observed * 100, baseline * 100, $alert_baseline_days,
               coalesce(((baseline - observed)::decimal(18, 9) * read_discount_usd)::double, 0)) as message
    from with_baseline
    where day >= $start and day < $end
      and requests >= $alert_min_requests
      -- an open rotating_preamble incident already explains the drop: one alert per incident
      and not exists (
          select 1 from marts.cache_alerts a
          where a.rule = 'rotating_preamble' and a.provider = with_baseline.provider
            and a.model is not distinct from with_baseline.model and a.tenant = with_baseline.tenant
            and a.app = with_baseline.app
            and a.day <= with_baseline.day and a.day > with_baseline.day - to_days($alert_baseline_days)
      )
      and baseline_requests >= $alert_min_requests
      and baseline - observed >= $alert_min_drop
)
select * from final;
