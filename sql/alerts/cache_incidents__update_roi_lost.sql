-- negative_cache_roi incidents: lost = cache-write premiums - read savings of the family over the
-- incident, from $roi_window_days - 1 days before it opened to its last day (each daily alert sums a
-- window, so adding them up would count a day several times). USD.
update marts.cache_incidents i
set lost_savings_usd = (
    select coalesce(sum(u.cache_write_premium_usd) - sum(u.savings_usd + u.cache_write_premium_usd), 0)::decimal(38, 15)
    from core.usage_priced u
    where u.priced and u.prefix_family = i.prefix_family and u.provider = i.provider
      and u.model is not distinct from i.model and u.tenant = i.tenant and u.app = i.app
      and u.day >= i.opened_day - to_days($roi_window_days - 1) and u.day <= i.last_day
)
where i.rule = 'negative_cache_roi';
