-- Remove marts.cost_reconciliation rows of the partition window [$start, $end) before it is rebuilt.
delete from marts.cost_reconciliation where day >= $start and day < $end;
