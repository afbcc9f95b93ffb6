-- Each prefix family's requests over the UTC days [$start, $end) (all days when null) for the time to
-- first token what-if (pipelines/lib/whatif/ttft_estimate.py): the requests that logged no TTFT, their
-- cache hits and the tokens those read (what the prefill estimate prices), and the measured difference
-- of the ones that did: miss median - hit median TTFT (ms, DECIMAL; a hit read cache_read_tokens > 0).
-- A usage bucket counts its requests (request_count; unknown counts as 1). Busiest family first.
select
    prefix_family, provider, model, tenant, app,
    sum(coalesce(request_count, 1))::bigint as requests,
    coalesce(sum(coalesce(request_count, 1)) filter (where ttft_ms is null), 0)::bigint as unmeasured_requests,
    coalesce(sum(coalesce(request_count, 1)) filter (where ttft_ms is null and cache_read_tokens > 0), 0)::bigint
        as unmeasured_hit_requests,
    coalesce(sum(cache_read_tokens) filter (where ttft_ms is null), 0)::bigint as unmeasured_cache_read_tokens,
    count(ttft_ms) as measured_requests,
    (round(quantile_cont(ttft_ms::double, 0.5) filter (where cache_read_tokens = 0), 3)
        - round(quantile_cont(ttft_ms::double, 0.5) filter (where cache_read_tokens > 0), 3))::decimal(18, 3)
        as measured_median_ttft_saved_ms
from core.usage
where ($start is null or day >= $start) and ($end is null or day < $end)
group by prefix_family, provider, model, tenant, app
order by requests desc, prefix_family, provider, model, tenant, app;
