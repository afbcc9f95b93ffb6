-- Bring a warehouse from before stage.unaccepted_files up to date: its data_quality rule left out the bad lines of
-- files with no good line (no accepted line to place them by), so every day such lines now count on is marked
-- pending and the next run judges it with them (cache_alerts__insert_data_quality.sql). Run by warehouse.prepare
-- when the definitions changed; safe to repeat (a day is only rebuilt once more).
insert into stage.pending_days by name
select distinct u.day, now() as staged_at, false as dependent
from stage.unaccepted_files u
where u.day is not null and u.day not in (select day from stage.pending_days where not dependent);
