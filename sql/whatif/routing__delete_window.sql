-- Remove marts.whatif_routing rows of the partition window [$start, $end) before it is rebuilt.
delete from marts.whatif_routing where day >= $start and day < $end;
