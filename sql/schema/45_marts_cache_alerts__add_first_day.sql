-- marts.cache_alerts.first_day: first UTC day of the incident (the day the alert fired).
alter table marts.cache_alerts add column if not exists first_day date;
