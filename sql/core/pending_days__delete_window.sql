-- The window [$start, $end) is being rebuilt: its days are no longer pending.
delete from stage.pending_days where day >= $start and day < $end;
