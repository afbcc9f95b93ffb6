-- The report's hit rate chart over the last $days UTC days: the token hit rate per day of the $top_apps
-- apps with the most prompt tokens (equal totals: by app name). Rows by day, then app, so that the same
-- data gives the same page.
with top as (
    select app
    from marts.daily_savings
    where day > (select max(day) from marts.daily_savings) - $days
    group by app
    order by sum(prompt_tokens) desc, app
    limit $top_apps
)
select day, app, sum(cache_read_tokens) / nullif(sum(prompt_tokens), 0) as token_hit_rate
from marts.daily_savings
where day > (select max(day) from marts.daily_savings) - $days and app in (select app from top)
group by day, app
order by day, app;
