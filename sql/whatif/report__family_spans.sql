-- The report's KV memory rows over the UTC days [$start, $end): the families with the most requests
-- that read or wrote the cache, and their mean cached span (tokens read or written per row that did);
-- equal counts by family, provider and model. app is the family's first app by name when it spans several.
-- From the families' day rows (marts.prefix_families: cached_rows, cached_requests, cached_span_tokens), not the
-- requests of the window again: the mean is their tokens over their rows, as an average of the rows would be.
select
    prefix_family, provider, model, min(app) as app,
    sum(cached_requests)::bigint as requests,
    round(sum(cached_span_tokens) / sum(cached_rows))::bigint as mean_cached_span_tokens
from marts.prefix_families
where day >= $start and day < $end and cached_rows > 0
group by prefix_family, provider, model
order by requests desc, prefix_family, provider, model
limit $limit;
