-- touched_ids: the request ids whose kept copy this batch may change. Of all accepted copies of an id
-- the one in the file whose name sorts first (then the earliest line, then item) is kept in core.usage;
-- every other copy is a quarantined duplicate (its row in stage.duplicate_rows), whatever order the files
-- arrived in. Touched: ids of rows the batch replaces, renames or drops that have quarantined copies,
-- ids of those files' quarantined copies, and ids of the batch's accepted records that repeat in the
-- batch or are held elsewhere (a retired generation included: its rows stay, under the history name).
-- Run before the batch's old rows are removed (registered tables batch_files, batch_predecessors;
-- staged_items).
create or replace temp table touched_ids as
with
changed_files as (  -- an appended part's file keeps its rows: they stay, as other files' do
    select source_file from batch_files where not appended
    union
    select old_file from batch_predecessors
),
new_ids as (
    select request_id from staged_items where reason is null
),
elsewhere as (  -- rows that stay after the batch: other files', and a retired generation's (kept as history)
    select request_id from core.usage where source_file not in (select source_file from changed_files)
    union all
    select request_id from core.usage
    where source_file in (select old_file from batch_predecessors where action = 'retire')
)
select request_id from stage.duplicate_rows where source_file in (select source_file from changed_files)
union
select u.request_id from core.usage u semi join stage.duplicate_rows d using (request_id)
where u.source_file in (select source_file from changed_files)
union
select request_id from new_ids group by 1 having count(*) > 1
union
select n.request_id from new_ids n semi join elsewhere e using (request_id)
union
select n.request_id from new_ids n semi join stage.duplicate_rows d using (request_id);
