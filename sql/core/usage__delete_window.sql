-- Remove core.usage rows of the partition window [$start, $end) before it is rebuilt.
delete from core.usage where day >= $start and day < $end;
