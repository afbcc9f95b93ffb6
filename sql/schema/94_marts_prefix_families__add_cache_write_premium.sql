-- The family's cache-write premiums per day, so the negative_cache_roi rule and its incidents' lost savings
-- read this mart's day rows instead of every request of their trailing window again (at 30 days of history they
-- read the cost table's whole history: bench/README.md, "A new day on 30 loaded days").
-- marts.prefix_families.cache_write_premium_usd: USD the family's priced requests paid for cache writes above the uncached input rate (sum of core.usage_costs.cache_write_premium_usd; null when none of the day's requests was priced).
alter table marts.prefix_families add column if not exists cache_write_premium_usd decimal(38, 15);
