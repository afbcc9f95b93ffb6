-- Bring a warehouse whose marts.whatif_cache_ttl rows were replayed before the replay was anchored on the log
-- (each request's own reads under its current TTL, a longer TTL's extra reads at the family's match rate:
-- 97_marts_whatif_cache_ttl__add_match_rate.sql) up to date: every day with a row without a match rate (a rebuilt
-- row always has one) is marked pending, so the next run rebuilds it. Before, a family whose opening changed on
-- every request was credited reads under a longer TTL that it could not get. Run by warehouse.prepare; safe to
-- repeat (a rebuilt day has none).
insert into stage.pending_days by name
select distinct w.day, now() as staged_at, false as dependent
from marts.whatif_cache_ttl w
where w.match_rate is null
  and w.day not in (select day from stage.pending_days where not dependent);
