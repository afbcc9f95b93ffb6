-- Remove marts.whatif_cache_ttl rows of the partition window [$start, $end) before it is rebuilt.
delete from marts.whatif_cache_ttl where day >= $start and day < $end;
