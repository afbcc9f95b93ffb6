-- Remove marts.prefix_families rows of the partition window [$start, $end) before it is rebuilt.
delete from marts.prefix_families where day >= $start and day < $end;
