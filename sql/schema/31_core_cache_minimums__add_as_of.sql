-- core.cache_minimums.as_of: the date the minimum was read from its source (minimums change over
-- time; reference/providers.md was compiled on 2026-11-29).
alter table core.cache_minimums add column if not exists as_of date;
