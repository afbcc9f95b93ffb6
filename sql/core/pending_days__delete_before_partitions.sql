-- Drop the pending days before the first daily partition ($start, CACHEMETER_PARTITIONS_START raised after they were
-- staged): Dagster builds no partition before it, so they would stay pending for ever and every run that rebuilt
-- them stopped on its invariant (pipelines/runner.py warns, naming them). Returns the days dropped (UTC dates).
delete from stage.pending_days where day < $start::date returning day
