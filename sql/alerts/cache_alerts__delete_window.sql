-- Remove every alert of the window [$start, $end) before the rules recompute it.
delete from marts.cache_alerts where day >= $start and day < $end;
