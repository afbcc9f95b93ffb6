-- Mark the days a batch's staging touches as pending: days of the previous rows of its files and of the
-- files it takes over (registered tables batch_files, batch_predecessors), and of its new rows (staged_items).
-- (A day pending only as another day's dependent is marked again, as changed itself, so its own
-- dependents follow.)
insert into stage.pending_days by name
select distinct day, now() as staged_at, false as dependent
from (
    select day from core.usage
    where source_file in (select source_file from batch_files union select old_file from batch_predecessors where action = 'drop')
    union
    select utc_day(ts) as day from staged_items where reason is null
)
where day not in (select day from stage.pending_days where not dependent);
