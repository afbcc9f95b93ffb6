-- Remove core.usage_costs rows of the partition window [$start, $end) before it is rebuilt.
delete from core.usage_costs where day >= $start and day < $end;
