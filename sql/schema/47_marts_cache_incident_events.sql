-- marts.cache_incident_events: the daily evidence of every incident (grain: incident, day, event):
-- opened, still_open (each later firing or unrecovered day), resolved, and retracted (a rebuild no
-- longer finds an incident it found before: late or edited data). Rebuilt with marts.cache_incidents;
-- retracted rows are kept, since the incident they name is gone.
create table if not exists marts.cache_incident_events (
    incident_key              varchar,          -- marts.cache_incidents.incident_key
    day                       date,             -- UTC day of the evidence (for retracted: the incident's last firing day)
    event                     varchar,          -- opened, still_open, resolved or retracted
    observed_token_hit_rate   double,           -- 0..1 that day (series incidents), else the rule's observed value
    lost_savings_usd          decimal(38, 15),  -- USD lost that day against the frozen baseline
    recorded_at               timestamptz       -- when the event was written (UTC)
);
