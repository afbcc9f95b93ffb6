-- Mark the days on which the bad lines of files with none accepted count, where a batch moves or changes them.
-- Such a file has no accepted line to place its bad ones by: they count on the day stage.unaccepted_files gives
-- (the newest usage day on or before the day the file was last written, else the first).
-- That day moves when a batch adds or removes a usage day on or before the write, and a changed file moves its
-- lines or changes their count: the day each such file's lines leave (temp table unaccepted_before, taken before
-- the batch) and the day they reach are both rebuilt, so nightly runs give what one build of the same logs gives
-- (before, the day left kept counting them too). Run once the batch is published (registered table batch_files).
insert into stage.pending_days by name
with
unaccepted_after as (
    select source_file, day from stage.unaccepted_files
),
moved as (  -- a batch file's old and new day; another file's, where they differ
    select b.day
    from unaccepted_before b left join unaccepted_after a using (source_file)
    where b.day is distinct from a.day or b.source_file in (select source_file from batch_files)
    union
    select a.day
    from unaccepted_after a left join unaccepted_before b using (source_file)
    where a.day is distinct from b.day or a.source_file in (select source_file from batch_files)
)
select distinct day, now() as staged_at, false as dependent
from moved
where day is not null and day not in (select day from stage.pending_days where not dependent);
