-- The share the cache TTL what-if applies to entries a longer TTL keeps alive (sql/whatif/cache_ttl__insert_window.sql),
-- so a reader sees why a family gains little from a longer TTL; a row without it was replayed before the replay was
-- anchored on the log (sql/migrations/whatif_cache_ttl__replay_anchored_on_the_log.sql rebuilds its day).
-- marts.whatif_cache_ttl.match_rate: of the tokens the family-day's requests inside its current TTL could have read from the previous request's entry (the smaller of the two spans), the share they read (0-1; 1 when none came inside it; near 0 for a rotating preamble); the same on each of the family-day's rows.
alter table marts.whatif_cache_ttl add column if not exists match_rate double;
