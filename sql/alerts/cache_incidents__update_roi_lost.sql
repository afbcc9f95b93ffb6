-- negative_cache_roi incidents: lost = cache-write premiums - read savings of the family over the
-- incident, from $roi_window_days - 1 days before it opened to its last day (each daily alert sums a
-- window, so adding them up would count a day several times). USD. From the family's day rows in
-- marts.prefix_families (the sums of its priced requests), not from every request of the incident again.
update marts.cache_incidents i
set lost_savings_usd = (
    select coalesce(sum(p.cache_write_premium_usd) - sum(p.savings_usd + p.cache_write_premium_usd), 0)::decimal(38, 15)
    from marts.prefix_families p
    where p.cache_write_premium_usd is not null and p.prefix_family = i.prefix_family and p.provider = i.provider
      and p.model is not distinct from i.model and p.tenant = i.tenant and p.app = i.app
      and p.day >= (i.opened_day - to_days($roi_window_days - 1))::date and p.day <= i.last_day
)
where i.rule = 'negative_cache_roi';
