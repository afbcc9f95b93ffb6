-- stage.unaccepted_files (view): each staged log file with bad lines and none accepted (a provider's new format, a
-- stray file), and the UTC day its bad lines count on for data_quality (day): it has no accepted line to place them
-- by, so the newest day of core.usage on or before the UTC day the file was last written (stage.files.mtime_ns),
-- else the first day of core.usage. Log files are written in time order, so the last write dates the last line; a
-- copied file's is when it was copied, hence a day with usage. Bad lines: quarantined at a line (not a whole-file
-- problem) and not a superseded streamed snapshot. The one definition cache_alerts__insert_data_quality.sql places
-- such lines by, and ingest/pending_days__insert_unaccepted_files.sql rebuilds the days they leave and reach by.
create or replace view stage.unaccepted_files as
select
    f.source_file,
    coalesce((select max(u.day) from core.usage u where u.day <= utc_day(make_timestamp(f.mtime_ns // 1000))),
             (select min(u.day) from core.usage u)) as day
from stage.files f
where f.rows_accepted = 0
  and f.source_file in (select q.source_file from core.quarantine q
                        where q.source_line > 0 and not starts_with(q.reason, 'superseded streaming snapshot'));
