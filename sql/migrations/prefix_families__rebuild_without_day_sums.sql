-- Bring a warehouse whose marts.prefix_families rows were built before their day sums for the rules and the report
-- (94_marts_prefix_families__add_cache_write_premium.sql, 95_marts_prefix_families__add_cached_spans.sql,
-- 96_marts_prefix_families__add_unmeasured_ttft.sql) up to date: every day with a family row built before them
-- (cached_rows or unmeasured_cache_read_tokens null: a rebuilt row always counts both) is
-- marked pending, so the next run rebuilds it (the negative_cache_roi rule and the report's KV-memory rows read
-- them from this mart, and so does its TTFT estimate). Run by warehouse.prepare; safe to repeat (a rebuilt day has none).
insert into stage.pending_days by name
select distinct p.day, now() as staged_at, false as dependent
from marts.prefix_families p
where (p.cached_rows is null or p.unmeasured_cache_read_tokens is null)
  and p.day not in (select day from stage.pending_days where not dependent);
