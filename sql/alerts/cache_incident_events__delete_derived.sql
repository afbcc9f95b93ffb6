-- Remove the events the lifecycle pass recomputes (retractions are kept: their incident is gone).
delete from marts.cache_incident_events where event <> 'retracted';
