-- negative_cache_roi: a prefix family whose cache-write premiums over the trailing
-- $roi_window_days days (today included) exceed what its cache reads saved: writes that were not
-- reused inside their TTL. Fires on every day the window is negative (premium at least
-- $roi_min_write_premium_usd USD): the daily evidence of one negative_cache_roi incident
-- (marts.cache_incidents), which stays open while the waste goes on. A day's alert reads the
-- $roi_window_days days before it and no more, whatever window a run rebuilds.
-- lost_savings_usd = premiums - read savings over the window.
insert into marts.cache_alerts by name
with
family_days as (
    -- each family's priced days from marts.prefix_families (built before this rule, the window's days by this run):
    -- its premiums and savings are the sums of its priced requests' (a day without one has no premium), so the
    -- rule reads day rows, not the window's requests
    select
        p.day, p.prefix_family, p.provider, p.model, p.tenant, p.app,
        p.cache_write_premium_usd as write_premium_usd,
        p.savings_usd + p.cache_write_premium_usd as read_savings_usd
    from marts.prefix_families p
    where p.cache_write_premium_usd is not null
      and p.day >= ($start::date - to_days($roi_window_days - 1))::date and p.day < $end
),
windowed as (
    select
        f.*,
        sum(f.write_premium_usd) over roi_window as window_premium_usd,
        sum(f.read_savings_usd) over roi_window as window_read_savings_usd
    from family_days f
    window roi_window as (
        partition by f.prefix_family, f.provider, f.model, f.tenant, f.app
        order by f.day
        range between to_days($roi_window_days - 1) preceding and current row
    )
),
flagged as (
    select
        w.*,
        w.window_premium_usd >= $roi_min_write_premium_usd and w.window_premium_usd > w.window_read_savings_usd as negative
    from windowed w
),
final as (
    select
        md5(concat_ws('|', 'negative_cache_roi', provider, coalesce(model, ''), tenant, app, prefix_family, day::varchar)) as alert_id,
        day, 'negative_cache_roi' as rule, 'warning' as severity, provider, model, tenant, app, prefix_family,
        window_read_savings_usd::double as observed, window_premium_usd::double as baseline,
        (window_premium_usd - window_read_savings_usd)::decimal(38, 15) as lost_savings_usd,
        day as first_day,
        format('{}/{} family {}: cache writes cost ${:.2f} more than uncached input over {} days but reads saved only ${:.2f}; '
               'the cached opening is not reused within its TTL (cache less, or keep it warm)',
               tenant, app, prefix_family, window_premium_usd, $roi_window_days, window_read_savings_usd) as message
    from flagged
    where day >= $start and day < $end and negative
)
select * from final;
