-- The report's measured time to first token over the UTC days [$start, $end): the latest days' rows of
-- marts.ttft_by_family (ms, as DOUBLE for display; the mart keeps DECIMAL), busiest family first
-- (equal counts: by the row's keys, tenant included).
select
    day, prefix_family, provider, model, app, hit_requests, miss_requests,
    hit_ttft_median_ms::double as hit_median_ms, miss_ttft_median_ms::double as miss_median_ms,
    median_ttft_saved_ms::double as median_saved_ms, hit_ttft_p95_ms::double as hit_p95_ms,
    miss_ttft_p95_ms::double as miss_p95_ms, bad_latency_requests
from marts.ttft_by_family
where day >= $start and day < $end
order by day desc, ttft_requests desc, prefix_family, provider, model, tenant, app
limit $limit;
