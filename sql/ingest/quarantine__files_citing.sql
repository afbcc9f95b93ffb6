-- Files holding a duplicate whose first copy was in one of $source_files (files just staged again) and
-- is gone from core.usage: the quarantine reason names the id and that file, 'duplicate request_id
-- <id> (first seen in <file>:<line>)'. Such a file is staged again after them, so that its copy of the
-- id is accepted (log rotation renames a file and starts a new one under the old name; an edit removes
-- a line). A file whose duplicates' first copies are all still there is left alone.
with
cited as (
    select unnest($source_files::varchar[]) as source_file
),
duplicates as (
    select
        q.source_file,
        q.reason[length('duplicate request_id ') + 1 : strpos(q.reason, ' (first seen in ' || c.source_file || ':') - 1] as request_id
    from core.quarantine q
    cross join cited c
    where starts_with(q.reason, 'duplicate request_id ')
        and q.source_file <> c.source_file
        and contains(q.reason, ' (first seen in ' || c.source_file || ':')
)
select distinct d.source_file
from duplicates d
anti join core.usage u on u.request_id = d.request_id
order by 1;
