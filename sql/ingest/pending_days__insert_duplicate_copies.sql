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
accepted as (
    select source_file, source_line, day from core.usage where source_file in (select source_file from bad_files)
),
neighbours as (
    select before.day
    from (select * from changed where source_file in (select source_file from bad_files)) c
    asof join accepted before on c.source_file = before.source_file and c.source_line > before.source_line
    union
    select after.day
    from (select * from changed where source_file in (select source_file from bad_files)) c
    asof join accepted after on c.source_file = after.source_file and c.source_line < after.source_line
)
select distinct day, now() as staged_at, false as dependent
from (select day from changed union select day from neighbours)
where day not in (select day from stage.pending_days where not dependent);
