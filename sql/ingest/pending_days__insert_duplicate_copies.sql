-- Mark pending the days of copies whose kept/duplicate status the duplicate rule changed (duplicate_copies), and
-- in their files, the days of the accepted lines next to them (the nearest before and after, core.usage as the batch
-- leaves it): data_quality places a file's quarantined lines on the day of the nearest accepted line before them
-- (cache_alerts__insert_data_quality.sql), so a copy that becomes a duplicate, or is kept again, moves the bad lines
-- after it to another day, which was not rebuilt (a break test: a line edited to the id another file holds moved two
-- bad lines to the day before, and its data_quality alert was missing until --all-days). Files holding no such line
-- are left out.
insert into stage.pending_days by name
with
changed as (
    -- (a restaged id's copies were removed and written again as they were: its copies keep their status, though the
    -- batch wrote each as accepted)
    select source_file, source_line, day from duplicate_copies
    where winner <> was_accepted and request_id not in (select request_id from restaged_ids)
),
bad_files as (
    select distinct source_file from core.quarantine
    where source_line > 0 and duplicate_request_id is null and source_file in (select source_file from changed)
),
accepted as (  -- a line of several records places on its last record's day (as data_quality does)
    select source_file, source_line, arg_max(day, coalesce(source_item, 0)) as day from core.usage
    where source_file in (select source_file from bad_files) group by all
),
neighbours as (
    select before.day
    from (select * from changed where source_file in (select source_file from bad_files)) c
    asof join accepted before on c.source_file = before.source_file and c.source_line > before.source_line
    union
    select after.day
    from (select * from changed where source_file in (select source_file from bad_files)) c
    asof join accepted after on c.source_file = after.source_file and c.source_line < after.source_line
),
line_records as (  -- every record of the lines holding a changed copy, kept or a duplicate copy, after the rule and
    -- before it (a changed copy's status before is was_accepted)
    select r.source_file, r.source_line, coalesce(r.source_item, 0) as source_item, r.day, r.kept as kept_after,
           coalesce(c.was_accepted, r.kept) as kept_before
    from (select source_file, source_line, source_item, day, true as kept from core.usage
          where source_file in (select source_file from bad_files)
          union all
          select source_file, source_line, source_item, day, false as kept from stage.duplicate_rows
          where source_file in (select source_file from bad_files)) r
    semi join changed l on l.source_file = r.source_file and l.source_line = r.source_line
    left join duplicate_copies c
        on c.source_file = r.source_file and c.source_line = r.source_line
        and coalesce(c.source_item, 0) = coalesce(r.source_item, 0)
),
own_lines as (  -- the day a changed copy's line gives its bad records and the lines after it, before the rule and
    -- after: its last kept record's, its first duplicate copy's (a break test: a span of a two-span OTLP line made a
    -- duplicate moved the bad line after it to the other span's day)
    select arg_max(day, source_item) filter (where kept_before) as kept_before,
           arg_max(day, source_item) filter (where kept_after) as kept_after,
           arg_min(day, source_item) filter (where not kept_before) as duplicate_before,
           arg_min(day, source_item) filter (where not kept_after) as duplicate_after
    from line_records group by source_file, source_line
)
select distinct day, now() as staged_at, false as dependent
from (select day from changed union select day from neighbours
      union select unnest([kept_before, kept_after, duplicate_before, duplicate_after]) as day from own_lines)
where day is not null and day not in (select day from stage.pending_days where not dependent);
