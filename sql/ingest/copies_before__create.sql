-- copies_before: every accepted copy of the touched ids (touched_ids) as the warehouse holds it before the batch:
-- its file, line, item and UTC day, and whether it was the kept copy (core.usage) or a quarantined duplicate
-- (stage.duplicate_rows). Run after touched_ids__create.sql, before the batch's old rows are removed. A file staged
-- again whole has its copies removed and written again; pending_days__insert_duplicate_copies.sql marks the days of
-- the copies whose kept/duplicate status the batch changed against this, not of every copy written again (a nightly
-- run rebuilt the day of a repeated id in a file staged whole, with the days reading it, every night).
create or replace temp table copies_before as
select request_id, source_file, source_line, coalesce(source_item, 0) as source_item, day, true as accepted
from core.usage semi join touched_ids using (request_id)
union all
select request_id, source_file, source_line, coalesce(source_item, 0) as source_item, day, false as accepted
from stage.duplicate_rows semi join touched_ids using (request_id);
