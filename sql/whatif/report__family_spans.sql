-- The report's KV memory rows over the UTC days [$start, $end): the families with the most requests
-- that read or wrote the cache, and their mean cached span (tokens read or written per request);
-- equal counts by family, provider and model. app is the family's first app by name when it spans several.
select
    prefix_family, provider, model, min(app) as app,
    sum(request_count)::bigint as requests,
    round(avg(cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens))::bigint as mean_cached_span_tokens
from core.usage
where day >= $start and day < $end and cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens > 0
group by prefix_family, provider, model
order by requests desc, prefix_family, provider, model
limit $limit;
