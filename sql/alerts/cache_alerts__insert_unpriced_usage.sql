-- unpriced_usage: a (provider, model) with at least $unpriced_min_requests requests on a day of
-- [$start, $end) that no price covers. Their cost is unknown (never counted as zero), so the
-- day's totals understate the bill until a price is added with --prices.
insert into marts.cache_alerts by name
with
unpriced as (
    select u.day, u.provider, u.model, min(c.unpriced_reason) as reason, sum(u.request_count) as requests,
           sum(u.prompt_tokens) as prompt_tokens
    from core.usage u
    join core.usage_costs c using (request_id, day)
    where u.day >= $start and u.day < $end and not c.priced
    group by all
),
final as (
    select
        md5(concat_ws('|', 'unpriced_usage', provider, coalesce(model, ''), '', '', '', day::varchar)) as alert_id,
        day, 'unpriced_usage' as rule, 'warning' as severity, provider, model,
        null::varchar as tenant, null::varchar as app, null::varchar as prefix_family,
        requests::double as observed, null::double as baseline, null::decimal(38, 15) as lost_savings_usd,
        day as first_day,
        format('{} {}: {:,} requests ({:,} prompt tokens) have no price: {}', provider, coalesce(model, '(no model)'),
               requests, prompt_tokens, reason) as message
    from unpriced
    where requests >= $unpriced_min_requests
)
select * from final;
