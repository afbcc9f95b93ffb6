-- The pending days before the first daily partition ($start): UTC dates, oldest first (pending_days__delete_before_partitions.sql).
select distinct day from stage.pending_days where day < $start::date order by day
