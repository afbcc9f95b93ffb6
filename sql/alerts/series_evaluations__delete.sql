-- Remove every series evaluation before the lifecycle pass writes them again.
delete from marts.series_evaluations;
