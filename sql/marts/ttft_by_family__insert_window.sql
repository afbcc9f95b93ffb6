-- Time to first token of cache hits against misses per family for the UTC days [$start, $end)
-- (table comment: sql/schema/88_marts_ttft_by_family.sql). Usage buckets (request_count <> 1) log no
-- latency and are left out. DuckDB interpolates percentiles of DECIMALs in binary floating point and then
-- truncates (860 came out 859.999), so they are taken over DOUBLE and rounded to the microsecond.
insert into marts.ttft_by_family by name
with measured as (
    select
        day, prefix_family, provider, model, tenant, app, ttft_ms, latency_ms, latency_issue,
        cache_read_tokens > 0 as hit
    from core.usage
    where day >= $start and day < $end
      and request_count = 1
      and (ttft_ms is not null or latency_ms is not null or latency_issue is not null)
)
select
    day, prefix_family, provider, model, tenant, app,
    count(ttft_ms) as ttft_requests,
    count(ttft_ms) filter (where hit) as hit_requests,
    count(ttft_ms) filter (where not hit) as miss_requests,
    round(quantile_cont(ttft_ms::double, 0.5) filter (where hit), 3)::decimal(18, 3) as hit_ttft_median_ms,
    round(quantile_cont(ttft_ms::double, 0.95) filter (where hit), 3)::decimal(18, 3) as hit_ttft_p95_ms,
    round(quantile_cont(ttft_ms::double, 0.5) filter (where not hit), 3)::decimal(18, 3) as miss_ttft_median_ms,
    round(quantile_cont(ttft_ms::double, 0.95) filter (where not hit), 3)::decimal(18, 3) as miss_ttft_p95_ms,
    miss_ttft_median_ms - hit_ttft_median_ms as median_ttft_saved_ms,
    miss_ttft_p95_ms - hit_ttft_p95_ms as p95_ttft_saved_ms,
    round(quantile_cont(latency_ms::double, 0.5) filter (where hit), 3)::decimal(18, 3) as hit_latency_median_ms,
    round(quantile_cont(latency_ms::double, 0.5) filter (where not hit), 3)::decimal(18, 3) as miss_latency_median_ms,
    count(*) filter (where latency_issue is not null) as bad_latency_requests
from measured
group by day, prefix_family, provider, model, tenant, app;
