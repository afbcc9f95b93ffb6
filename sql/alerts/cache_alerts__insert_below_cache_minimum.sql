-- below_cache_minimum: a prefix family whose prompts sit just under the model's minimum cacheable
-- length (between $below_minimum_margin and 1 x core.cache_minimums) for at least
-- $below_minimum_min_share of its requests on a day of [$start, $end), with at least
-- $alert_min_requests requests: a little padding or reordering would make the opening cacheable.
-- lost_savings_usd is the upper bound: those prompts' tokens x (input - cache read price).
insert into marts.cache_alerts by name
with
near_minimum as (
    select
        u.day, u.prefix_family, u.provider, u.model, u.tenant, u.app,
        sum(u.request_count) as requests,
        sum(u.request_count) filter (where u.cache_outcome = 'ineligible'
                                      and u.prompt_tokens >= $below_minimum_margin * u.min_cacheable_tokens) as near_requests,
        sum(u.read_discount_usd) filter (where u.cache_outcome = 'ineligible'
                                         and u.prompt_tokens >= $below_minimum_margin * u.min_cacheable_tokens) as upper_bound_usd,
        max(u.min_cacheable_tokens) as minimum
    from core.usage_priced u
    where u.day >= $start and u.day < $end
    group by all
),
final as (
    select
        md5(concat_ws('|', 'below_cache_minimum', provider, coalesce(model, ''), tenant, app, prefix_family, day::varchar)) as alert_id,
        day, 'below_cache_minimum' as rule, 'warning' as severity, provider, model, tenant, app, prefix_family,
        near_requests / requests as observed, $below_minimum_min_share::double as baseline,
        coalesce(upper_bound_usd, 0)::decimal(38, 15) as lost_savings_usd, day as first_day,
        format('{}/{} ({} {}): {:.0f}% of requests have prompts just under the {:,}-token cache minimum, so nothing is cached; '
               'a little padding or moving stable text to the front would make them cacheable (up to ${:.2f} that day)',
               tenant, app, provider, coalesce(model, '?'), near_requests / requests * 100, minimum,
               coalesce(upper_bound_usd, 0)) as message
    from near_minimum
    where requests >= $alert_min_requests and near_requests / requests >= $below_minimum_min_share
)
select * from final;
