-- The report's lost savings by cause over the last $days UTC days: the alerts' lost_savings_usd (USD,
-- DOUBLE for charting) and count per rule, largest loss first (equal losses: by rule).
select
    rule as cause,
    coalesce(sum(lost_savings_usd), 0)::double as lost_savings_usd,
    count(*) as alerts
from marts.cache_alerts
where day > (select max(day) from marts.daily_savings) - $days
group by rule
order by lost_savings_usd desc, cause;
