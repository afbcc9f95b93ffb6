-- marts.alert_deliveries.notice: which notice of the incident (alert_id = marts.cache_incidents.incident_key) was posted: opened, resolved or retracted.
alter table marts.alert_deliveries add column if not exists notice varchar;
