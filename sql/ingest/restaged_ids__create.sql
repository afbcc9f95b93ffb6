-- restaged_ids: the touched ids (touched_ids) whose every copy the batch writes again as it was. A file staged again
-- whole (one under 1 MB, a log of request bodies, a streamed transcript, gzip, UTF-16) that holds a request id twice
-- has that id touched on every run, though its copies (file, line, item and every published column:
-- usage_row_digest) are the same before the batch (core.usage and stage.duplicate_rows) and after it (the batch's
-- rows): the duplicate rule keeps the same copy, so nothing on their days changes for them. Without this, the
-- repeat's day and every day reading it were rebuilt each night (the demo with one such file: 14 days rebuilt for one
-- appended line, then 1). An id with a copy in a file the batch takes over, renames or retires as history
-- (batch_predecessors) is never restaged: its copies move. Read by pending_days__insert_batch.sql and
-- pending_days__insert_duplicate_copies.sql. Run after touched_ids__create.sql, before the batch's old rows are
-- removed (registered tables batch_files, batch_predecessors; view batch_usage_rows).
create or replace temp table restaged_ids as
with
restaged_files as (  -- an appended part's file keeps its rows: its new lines' copies are new copies
    select source_file from batch_files where not appended
),
copies_before as (
    select * from core.usage where source_file in (select source_file from restaged_files)
    union all by name
    select * from stage.duplicate_rows where source_file in (select source_file from restaged_files)
),
sides as (
    select 'before' as side, request_id, count(*) as n, sum(usage_row_digest(c)) as digest
    from copies_before c semi join touched_ids using (request_id) group by request_id
    union all
    select 'after' as side, request_id, count(*) as n, sum(usage_row_digest(b)) as digest
    from batch_usage_rows b semi join touched_ids using (request_id) group by request_id
),
moved as (  -- ids held by a file the batch takes over, renames or retires
    select request_id from core.usage where source_file in (select old_file from batch_predecessors)
    union
    select request_id from stage.duplicate_rows where source_file in (select old_file from batch_predecessors)
)
select request_id from sides
where request_id not in (select request_id from moved)
group by request_id
having count(*) = 2 and count(distinct (n, digest)) = 1;
