-- The report's costliest prefix families over the last $days UTC days (USD, DOUBLE for display): cost,
-- savings and below_own_trend_usd (the family's lost_savings_usd: each day's gap below its own trailing hit rate; named
-- apart from the incidents' lost savings, measured against a frozen baseline) per family and provider, costliest
-- first (equal costs: by family, provider). app is the family's first app by name when it spans several.
select
    prefix_family,
    provider,
    min(app) as app,
    sum(requests)::bigint as requests,
    sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0) as token_hit_rate,
    sum(cost_usd)::double as cost_usd,
    sum(savings_usd)::double as savings_usd,
    sum(lost_savings_usd)::double as below_own_trend_usd
from marts.prefix_families
where day > (select max(day) from marts.daily_savings) - $days
group by prefix_family, provider
order by cost_usd desc, prefix_family, provider
limit 10;
