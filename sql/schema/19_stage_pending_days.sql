-- stage.pending_days: UTC days whose staged rows changed (a new, late or edited file), plus the
-- staged days after them whose stored baselines read them (pending_days__insert_dependents.sql), and
-- whose partitions have not been rebuilt since (grain: day). The late-data sensor turns each into a
-- run of that partition, and `cachemeter run` rebuilds exactly these days; building a day's last asset
-- (marts.cache_alerts) clears it. A changed price book marks every staged day pending (repricing).
create table if not exists stage.pending_days (
    day       date,         -- UTC day to rebuild
    staged_at timestamptz   -- when the change was staged (UTC); part of the sensor's run key
);
