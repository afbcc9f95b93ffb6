-- The report's TTFT-estimate rows over the UTC days [$start, $end): the busiest families (most requests) whose cache
-- hits logged no time to first token, with those hits and the tokens the family's unmeasured requests read
-- (what pipelines/lib/whatif/ttft_estimate.estimate prices). From the families' day rows (marts.prefix_families:
-- requests, unmeasured_hit_requests, unmeasured_cache_read_tokens), not the requests of the window again; the same
-- rows, in the same order, as sql/whatif/ttft__family_usage.sql over the window (which also has the measured medians
-- `cachemeter whatif ttft` prints, and medians do not add up from day rows).
select
    prefix_family, provider, model, tenant, app,
    sum(requests)::bigint as requests,
    sum(unmeasured_hit_requests)::bigint as unmeasured_hit_requests,
    sum(unmeasured_cache_read_tokens)::bigint as unmeasured_cache_read_tokens
from marts.prefix_families
where day >= $start and day < $end
group by prefix_family, provider, model, tenant, app
having sum(unmeasured_hit_requests) > 0
order by requests desc, prefix_family, provider, model, tenant, app
limit $limit;
