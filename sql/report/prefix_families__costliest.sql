-- The report's costliest prefix families over the last $days UTC days (USD, DOUBLE for display): cost,
-- savings and lost savings per family and provider, costliest first (equal costs: by family, provider).
-- app is the family's first app by name when it spans several.
select
    prefix_family,
    provider,
    min(app) as app,
    sum(requests)::bigint as requests,
    sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0) as token_hit_rate,
    sum(cost_usd)::double as cost_usd,
    sum(savings_usd)::double as savings_usd,
    sum(lost_savings_usd)::double as lost_savings_usd
from marts.prefix_families
where day > (select max(day) from marts.daily_savings) - $days
group by prefix_family, provider
order by cost_usd desc, prefix_family, provider
limit 10;
