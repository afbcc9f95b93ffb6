-- The window [$start, $end) has been rebuilt through its last daily asset (marts.cache_alerts): its
-- days are no longer pending.
delete from stage.pending_days where day >= $start and day < $end;
