-- Files holding a quarantined duplicate whose first copy is gone from core.usage (its file was staged
-- again without it: log rotation renames a file and starts a new one under the old name; an edit
-- removes a line). Such a file is staged again, so that its copy of the id is accepted.
select distinct q.source_file
from core.quarantine q
anti join core.usage u on u.request_id = q.duplicate_request_id
where q.duplicate_request_id is not null
order by 1;
