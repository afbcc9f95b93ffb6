-- Empty the cache-minimum facts before they are reloaded (same transaction as the reload).
delete from core.cache_minimums;
