-- Remove every series evaluation: nothing is recorded of what they were judged from (a warehouse from
-- before stage.incident_series), so every series is judged anew.
delete from marts.series_evaluations;
