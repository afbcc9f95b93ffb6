-- Store the incidents' daily events (the registered relation events_frame).
insert into marts.cache_incident_events by name select *, now() as recorded_at from events_frame;
