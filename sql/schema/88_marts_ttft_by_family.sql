-- marts.ttft_by_family: measured time to first token, cache hits against misses (grain: day,
-- prefix_family, provider, model, tenant, app). A request is a hit when it read anything from the
-- cache (cache_read_tokens > 0), else a miss. Only family-days with per-request rows that logged a
-- latency, a time to first token or a latency issue have a row; the TTFT columns measure the rows
-- with a usable core.usage.ttft_ms. Percentiles interpolate between the closest ranks (DuckDB
-- quantile_cont over DOUBLE, rounded to the microsecond): the p95 of n values sits at rank
-- 1 + 0.95 x (n - 1). Milliseconds, DECIMAL.
create table if not exists marts.ttft_by_family (
    day                       date,           -- UTC day
    prefix_family             varchar,        -- the family key (see core.usage.prefix_family)
    provider                  varchar,        -- cachemeter provider name
    model                     varchar,        -- model as reported
    tenant                    varchar,        -- owning tenant
    app                       varchar,        -- calling application
    ttft_requests             bigint,         -- requests that logged a usable time to first token
    hit_requests              bigint,         -- of which cache hits (cache_read_tokens > 0)
    miss_requests             bigint,         -- of which misses (nothing read from cache)
    hit_ttft_median_ms        decimal(18, 3), -- ms, median TTFT of the hits (null: no hits)
    hit_ttft_p95_ms           decimal(18, 3), -- ms, 95th percentile TTFT of the hits
    miss_ttft_median_ms       decimal(18, 3), -- ms, median TTFT of the misses (null: no misses)
    miss_ttft_p95_ms          decimal(18, 3), -- ms, 95th percentile TTFT of the misses
    median_ttft_saved_ms      decimal(18, 3), -- ms, miss median - hit median (positive: hits answer sooner; null unless both)
    p95_ttft_saved_ms         decimal(18, 3), -- ms, miss p95 - hit p95
    hit_latency_median_ms     decimal(18, 3), -- ms, median end-to-end latency of the hits that logged one
    miss_latency_median_ms    decimal(18, 3), -- ms, median end-to-end latency of the misses that logged one
    bad_latency_requests      bigint          -- requests whose logged latency fields were unusable (core.usage.latency_issue)
);
