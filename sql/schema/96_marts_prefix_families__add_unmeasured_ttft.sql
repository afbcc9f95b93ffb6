-- The family's cache hits that logged no time to first token, per day, so the report's TTFT estimate
-- (sql/whatif/report__ttft_estimate.sql) adds up the day rows of its 30 days instead of reading their requests again
-- (0.23 s of a 30-day report at 200,000 requests a day: bench/README.md, "A new day on 30 loaded days").
-- marts.prefix_families.unmeasured_hit_requests: requests (sum of request_count, unknown as 1) that read the cache (cache_read_tokens > 0) and logged no usable TTFT (core.usage.ttft_ms null); 0 when none.
alter table marts.prefix_families add column if not exists unmeasured_hit_requests bigint;
-- marts.prefix_families.unmeasured_cache_read_tokens: tokens read from the cache by the day's requests that logged no usable TTFT; 0 when none.
alter table marts.prefix_families add column if not exists unmeasured_cache_read_tokens bigint;
