-- Remove marts.ttft_by_family rows of the partition window [$start, $end) before it is rebuilt.
delete from marts.ttft_by_family where day >= $start and day < $end;
