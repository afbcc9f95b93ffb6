-- The report's cache TTL switches that pay over the UTC days [$start, $end): families whose other
-- retention option would have cost less than they cost now, both at list rates (a bill that differs from the
-- list is not what the option is priced against), with USD per day (DECIMAL) over
-- the days they used the cache, largest saving first (equal savings: by family, provider, model, app,
-- current TTL and the TTL switched to, the row's keys). match_rate: the days' match rates weighted by their
-- requests (0-1: the share of reads the family got while its entry was alive, which the replay applies to the
-- entries a longer TTL keeps alive; marts.whatif_cache_ttl.match_rate).
select
    prefix_family, provider, model, app, current_ttl, ttl_option as switch_to,
    count(distinct day) as days,
    sum(requests)::bigint as requests,
    sum(match_rate * requests) / sum(requests) as match_rate,
    sum(cost_now_usd) as cost_now_usd,
    sum(cost_usd) as cost_after_usd,
    (sum(saving_usd) / count(distinct day))::decimal(38, 15) as saving_per_day_usd
from marts.whatif_cache_ttl
where day >= $start and day < $end and ttl_option <> current_ttl
group by prefix_family, provider, model, app, current_ttl, ttl_option
having sum(saving_usd) > 0
order by saving_per_day_usd desc, prefix_family, provider, model, app, current_ttl, switch_to
limit $limit;
