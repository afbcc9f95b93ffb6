-- Alerts not yet delivered, oldest first, with the number of attempts already made.
select
    a.alert_id, a.day, a.rule, a.severity, a.provider, a.model, a.tenant, a.app, a.prefix_family,
    a.observed, a.baseline, a.lost_savings_usd, a.message, a.divergence_offset_chars, a.divergence_span,
    coalesce((select max(d.attempt) from marts.alert_deliveries d where d.alert_id = a.alert_id), 0) as attempts
from marts.cache_alerts a
where not exists (
    select 1 from marts.alert_deliveries d where d.alert_id = a.alert_id and d.status = 'delivered'
)
order by a.day, a.alert_id;
