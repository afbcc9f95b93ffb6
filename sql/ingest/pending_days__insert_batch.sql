-- Mark the days a batch's staging changes as pending: the days of the previous rows of its files and of the files it
-- takes over (registered tables batch_files, batch_predecessors), and of its new rows (batch_usage_rows), but a day
-- whose rows of those files are the same before and after the batch (usage_row_digest: count and sum per day) and
-- whose quarantined lines of them are too. Appending a day's lines to a file of many days rebuilt every day in it
-- (a break test: the README promises only the days new or changed records touch).
-- A quarantined line that data_quality places on another day after the batch than before (a partial last line now
-- whole, a line whose accepted neighbour changed) marks both days: data_quality places it on the day of a duplicate
-- copy on its own line, else of the nearest kept line from its own back, else the nearest after it. Every day of the
-- batch's files is marked when no accepted line places a changed one. On the batch's side a restaged id's
-- (restaged_ids__create.sql) duplicate copies stay duplicates. Ids whose kept copy the batch may change (touched_ids,
-- but not restaged_ids, whose copies are written again as they were) mark their rows' days.
-- (A day pending only as another day's dependent is marked again, as changed itself, so its own dependents follow.)
insert into stage.pending_days by name
with
changed_ids as (  -- the ids whose kept copy the batch may change
    select request_id from touched_ids except select request_id from restaged_ids
),
old_files as (  -- an appended part's file keeps its rows: only its new lines' days are new
    select source_file from batch_files where not appended union select old_file from batch_predecessors where action = 'drop'
),
old_rows as materialized (  -- read once: core.usage is the warehouse's largest table, and this is read five times
    select * from core.usage where source_file in (select source_file from old_files)
),
old_copies as (  -- the files' accepted copies before the batch: kept (old_rows) and quarantined as duplicates, as
    -- the batch's rows hold every accepted copy before the duplicate rule (a file holding a repeated id, staged again
    -- whole, differed on the repeat's day on every run)
    select * from old_rows
    union all by name
    select * from stage.duplicate_rows where source_file in (select source_file from old_files)
),
old_days as (
    select distinct day from old_copies
),
digests as (  -- only the days that held rows before: a new file's days are pending whatever they hold
    select 'old' as side, day, count(*) as n, sum(usage_row_digest(o)) as digest from old_copies o group by day
    union all
    select 'new' as side, day, count(*) as n, sum(usage_row_digest(b)) as digest
    from batch_usage_rows b where day in (select day from old_days) group by day
),
same_days as (
    select day from digests group by day having count(*) = 2 and count(distinct (n, digest)) = 1
),
old_bad as (  -- not the copies quarantined as duplicates: the duplicate rule decides those after staging (touched_ids)
    select source_file, source_line, source_item, reason from core.quarantine
    where source_file in (select source_file from old_files) and source_line > 0 and duplicate_request_id is null
),
staged_again as (  -- the files that held rows or quarantined lines before (a new file's days are pending anyway),
    -- and the files whose appended lines the batch staged (their new quarantined lines are placed among their rows)
    select distinct source_file from old_rows union select distinct source_file from old_bad
    union select source_file from batch_files where appended
),
new_bad as (
    select source_file, source_line, source_item, reason from staged_items
    where reason is not null and source_line > 0 and source_file in (select source_file from staged_again)
),
restaged_losers as (  -- the batch's copies the rule quarantines again as duplicates, as before: restaged ids'
    select source_file, source_line, coalesce(source_item, 0) as source_item from stage.duplicate_rows
    where request_id in (select request_id from restaged_ids) and source_file in (select source_file from new_bad)
),
accepted_lines as (  -- of the files with quarantined lines only, each side's accepted lines: a kept copy places the
    -- lines from its own on, a duplicate copy only its own line's items (data_quality's rule)
    select 'old' as side, source_file, source_line, source_item, day, false as duplicate from old_rows
    where source_file in (select source_file from old_bad)
    union all
    select 'old' as side, source_file, source_line, source_item, day, true as duplicate from stage.duplicate_rows
    where source_file in (select source_file from old_files) and source_file in (select source_file from old_bad)
    union all  -- (a changed id's copy counts as kept: its days are marked, and pending_days__insert_duplicate_copies.sql
    -- marks its neighbours' once the rule has run)
    select 'new' as side, s.source_file, s.source_line, s.source_item, utc_day(s.ts) as day,
           exists (select 1 from restaged_losers r where r.source_file = s.source_file and r.source_line = s.source_line
                   and r.source_item = coalesce(s.source_item, 0)) as duplicate
    from staged_items s
    where s.reason is null and s.source_file in (select source_file from new_bad)
    union all  -- an appended part's file keeps its rows and its duplicate copies: they place its new lines too
    select 'new' as side, source_file, source_line, source_item, day, false as duplicate from core.usage
    where source_file in (select source_file from batch_files where appended)
      and source_file in (select source_file from new_bad)
    union all
    select 'new' as side, source_file, source_line, source_item, day, true as duplicate from stage.duplicate_rows
    where source_file in (select source_file from batch_files where appended)
      and source_file in (select source_file from new_bad)
),
kept_lines as (  -- a line of several records places on its last record's day (as data_quality does)
    select side, source_file, source_line, arg_max(day, coalesce(source_item, 0)) as day
    from accepted_lines where not duplicate group by all
),
duplicate_lines as (  -- a bad record on a line with duplicate copies: the first copy's day (as data_quality does)
    select side, source_file, source_line, arg_min(day, coalesce(source_item, 0)) as day
    from accepted_lines where duplicate group by all
),
placed as (  -- each quarantined line on the day data_quality counts it, on each side
    select b.side, b.source_file, b.source_line, b.source_item, b.reason,
           coalesce(d.day, before.day, after.day) as day
    from (select 'old' as side, * from old_bad union all select 'new' as side, * from new_bad) b
    left join duplicate_lines d
        on d.side = b.side and d.source_file = b.source_file and d.source_line = b.source_line
    asof left join kept_lines before
        on b.side = before.side and b.source_file = before.source_file and b.source_line >= before.source_line
    asof left join kept_lines after
        on b.side = after.side and b.source_file = after.source_file and b.source_line <= after.source_line
),
bad_days as (  -- the days of the placements found on one side only: a changed line's, or a line an accepted one
    -- before it no longer places (a break test: a kept line blanked moved the bad line after it to the day before)
    select day from (
        select * exclude (side) from placed where side = 'old'
        except all
        select * exclude (side) from placed where side = 'new')
    union all
    select day from (
        select * exclude (side) from placed where side = 'new'
        except all
        select * exclude (side) from placed where side = 'old')
),
all_days as (
    select day from old_days
    union
    select utc_day(ts) as day from staged_items where reason is null
    union  -- (an appended part's new quarantined line may sit on a day of the file's rows that stay)
    select day from bad_days where day is not null
)
select distinct day, now() as staged_at, false as dependent
from all_days
where (day not in (select day from same_days)
       or day in (select day from bad_days)
       or exists (select 1 from bad_days where day is null)
       or day in (select day from old_rows where request_id in (select request_id from changed_ids))
       or day in (select utc_day(ts) from staged_items where reason is null and request_id in (select request_id from changed_ids)))
  and day not in (select day from stage.pending_days where not dependent);
