-- Roll core.usage and core.usage_costs up to (day, provider, model, tenant, app) for [$start, $end).
-- Money sums only priced rows (exact DECIMAL); unpriced requests are counted, not costed at zero.
-- cost_usd is billed (the reported amount where a row has one), list_cost_usd the same rows at list rates.
insert into marts.daily_savings by name
with
joined as (
    select * from core.usage_priced where day >= $start and day < $end
),
final as (
    select
        day,
        provider,
        model,
        tenant,
        app,
        sum(request_count)::bigint as requests,
        sum(prompt_tokens)::bigint as prompt_tokens,
        sum(uncached_input_tokens)::bigint as uncached_input_tokens,
        sum(cache_read_tokens)::bigint as cache_read_tokens,
        sum(cache_write_5m_tokens + cache_write_1h_tokens)::bigint as cache_write_tokens,
        sum(output_tokens)::bigint as output_tokens,
        sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0) as token_hit_rate,
        -- rows of one request each: a usage bucket (many requests summed) is a 'hit' when any of them read the cache,
        -- which says nothing of how many did (a break test: a bucket of 2,100 requests made the rate 1.0)
        coalesce(count(*) filter (where cache_outcome = 'hit' and request_count = 1), 0)
            / nullif(count(*) filter (where cache_outcome <> 'ineligible' and request_count = 1), 0) as request_hit_rate,
        coalesce(sum(cost_usd), 0)::decimal(38, 15) as cost_usd,
        coalesce(sum(no_cache_cost_usd), 0)::decimal(38, 15) as no_cache_cost_usd,
        coalesce(sum(savings_usd), 0)::decimal(38, 15) as savings_usd,
        coalesce(sum(request_count) filter (where not priced), 0)::bigint as unpriced_requests,
        coalesce(sum(list_cost_usd), 0)::decimal(38, 15) as list_cost_usd,
        coalesce(sum(request_count) filter (where cost_basis = 'billed'), 0)::bigint as billed_requests
    from joined
    group by all
)
select * from final;
