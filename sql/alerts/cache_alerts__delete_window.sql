-- Remove the hit_rate_drop alerts of the window [$start, $end) before they are recomputed.
delete from marts.cache_alerts where rule = 'hit_rate_drop' and day >= $start and day < $end;
