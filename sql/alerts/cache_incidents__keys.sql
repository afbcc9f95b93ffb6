-- The incidents stored by the previous rebuild, with their last firing day (to retract vanished ones).
select incident_key, last_day from marts.cache_incidents;
