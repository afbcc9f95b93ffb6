-- Remove every incident before the lifecycle pass writes them again (it recomputes them all).
delete from marts.cache_incidents;
