-- Bring a warehouse whose marts.prefix_families rows were built before cache_write_premium_usd
-- (94_marts_prefix_families__add_cache_write_premium.sql) up to date: a day with priced requests whose family
-- rows all lack the premium is marked pending, so the next run rebuilds it (the negative_cache_roi rule reads the
-- premium from this mart). Run by warehouse.prepare; safe to repeat (a rebuilt day with priced requests has a
-- family row with its premium).
insert into stage.pending_days by name
select p.day, now() as staged_at, false as dependent
from marts.prefix_families p
where p.day in (select distinct day from core.usage_costs where priced)
  and p.day not in (select day from stage.pending_days where not dependent)
group by p.day
having count(p.cache_write_premium_usd) = 0;
