-- The report's incidents: every open one and those firing in the last $days UTC days, open first, then
-- the latest opened, critical before warning; equal ones by rule and scope (incident_key last, unique).
select
    status,
    opened_day::varchar as since,
    coalesce(resolved_day::varchar, '') as resolved,
    severity,
    rule,
    coalesce(lost_savings_usd, 0)::double as lost_savings_usd,
    message
from marts.cache_incidents
where last_day > (select max(day) from marts.daily_savings) - $days or status = 'open'
order by
    status = 'open' desc, opened_day desc, severity, rule, provider, model, tenant, app, prefix_family, incident_key
limit 50;
