-- Mark the days a batch's staging touches as pending: days of the previous rows of its files and of the
-- files it takes over (registered tables batch_files, batch_predecessors), and of its new rows (staged_items);
-- for a file with bad lines and none accepted, the day its bad lines count on (the newest usage day on or before
-- the day it was last written: cache_alerts__insert_data_quality.sql), so data_quality judges them.
-- (A day pending only as another day's dependent is marked again, as changed itself, so its own
-- dependents follow.)
insert into stage.pending_days by name
with
new_days as (
    select distinct utc_day(ts) as day from staged_items where reason is null
),
unaccepted_files as (  -- the batch's files with bad lines (not whole-file problems, not superseded snapshots), none accepted
    select b.source_file, utc_day(make_timestamp(any_value(b.mtime_ns) // 1000)) as written_day
    from batch_files b
    join staged_items i on i.source_file = b.source_file
    group by b.source_file
    having count(*) filter (where i.reason is null) = 0
       and count(*) filter (where i.source_line > 0 and not starts_with(i.reason, 'superseded streaming snapshot')) > 0
),
touched as (
    select day from core.usage
    where source_file in (select source_file from batch_files union select old_file from batch_predecessors where action = 'drop')
    union
    select day from new_days
    union
    select (select max(d.day) from (select distinct day from core.usage union select day from new_days) d
            where d.day <= f.written_day)
    from unaccepted_files f
)
select distinct day, now() as staged_at, false as dependent
from touched
where day is not null and day not in (select day from stage.pending_days where not dependent);
