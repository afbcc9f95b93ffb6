-- The report's lost savings by cause: the incidents of its table (every open one and those firing in the
-- last $days UTC days) summed per rule: lost_savings_usd (USD, DOUBLE for charting; each incident's gap below
-- the baseline frozen on the day it opened, the amount its notice reports) and the number of incidents,
-- largest loss first (equal losses: by rule). The chart and the table under it give one figure for one
-- incident (the daily alerts' trailing baselines gave a second, a reader's question).
select
    rule as cause,
    coalesce(sum(lost_savings_usd), 0)::double as lost_savings_usd,
    count(*) as incidents
from marts.cache_incidents
where last_day > (select max(day) from marts.daily_savings) - $days or status = 'open'
group by rule
order by lost_savings_usd desc, cause;
