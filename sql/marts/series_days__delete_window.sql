-- Remove the series days of the window [$start, $end) before they are aggregated again.
delete from marts.series_days where day >= $start and day < $end;
