-- Remove marts.daily_savings rows of the partition window [$start, $end) before it is rebuilt.
delete from marts.daily_savings where day >= $start and day < $end;
