-- The report's cost chart: each of the last $days UTC days of marts.daily_savings (counting back from
-- the last day), cost, no-cache cost and savings of all series together (USD, DOUBLE for charting).
select
    day,
    sum(cost_usd)::double as cost_usd,
    sum(no_cache_cost_usd)::double as no_cache_cost_usd,
    sum(savings_usd)::double as savings_usd
from marts.daily_savings
where day > (select max(day) from marts.daily_savings) - $days
group by day
order by day;
