-- Drop the pending days before the first daily partition ($start, CACHEMETER_PARTITIONS_START raised after they were
-- staged): Dagster builds no partition before it, so they would stay pending for ever and every run that rebuilt
-- them stopped on its invariant (pipelines/runner.py warns, naming them; it lists them first with
-- pending_days__before_partitions.sql: a DuckLake table takes no DELETE ... RETURNING).
delete from stage.pending_days where day < $start::date
