-- Record a retraction for each incident a rebuild no longer finds (retracted_frame), once per incident.
insert into marts.cache_incident_events by name
select r.incident_key, r.day, 'retracted' as event, null as observed_token_hit_rate, null as lost_savings_usd,
       now() as recorded_at
from retracted_frame r
where not exists (select 1 from marts.cache_incident_events e where e.incident_key = r.incident_key and e.event = 'retracted');
