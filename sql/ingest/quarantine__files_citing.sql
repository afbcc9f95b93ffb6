-- Files holding duplicates whose first copy was in one of $source_files (a list of files just staged
-- again): the quarantine reason names it, 'duplicate request_id <id> (first seen in <file>:<line>)'.
-- Such a file is staged again after them, so that its copy of an id is accepted if the first one is
-- gone (log rotation renames a file and starts a new one under the old name; an edit removes a line).
select distinct q.source_file
from core.quarantine q
cross join (select unnest($source_files::varchar[]) as source_file) cited
where starts_with(q.reason, 'duplicate request_id ')
    and q.source_file <> cited.source_file
    and contains(q.reason, ' (first seen in ' || cited.source_file || ':')
order by 1;
