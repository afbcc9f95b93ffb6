-- duplicate_copies: every accepted copy of the touched ids (touched_ids), from core.usage (was_accepted)
-- and stage.duplicate_rows, each marked winner when it is the copy the rule keeps: the one in the file
-- whose name sorts first, then the earliest line, then item (first: that copy's file, line and item). Of a
-- streamed-snapshot format's copies (a transcript resumed or replayed in another file) the fullest wins first
-- (most prompt + output tokens), as within a file (staged_items__supersede_snapshots.sql): a fuller snapshot is
-- never dropped as a duplicate of an earlier one.
-- Regions between `-- <generated NAME>` and `-- </generated>` are written from pipelines/ingest/formats.yaml by
-- `python -m pipelines.ingest.format_sql` (drift-tested); the rest is hand-written.
create or replace temp table duplicate_copies as
with
copies as (
    select u.*, true as was_accepted from core.usage u semi join touched_ids t using (request_id)
    union all by name
    select d.*, false as was_accepted from stage.duplicate_rows d semi join touched_ids t using (request_id)
),
ranked as (
    select *,
        -- the streamed-snapshot formats' ids: the fullest copy first; every other id: the plain order
        case when bool_and(source_format in (
                 -- <generated snapshot_formats: the formats with the snapshots option>
                 'claude_code_transcript', 'codex_rollout'
                 -- </generated>
             )) over (partition by request_id)
             then arg_min(struct_pack(f := source_file, l := source_line, i := coalesce(source_item, 0)),
                          struct_pack(s := -(coalesce(prompt_tokens, 0) + coalesce(output_tokens, 0)), f := source_file,
                                      l := source_line, i := coalesce(source_item, 0))) over (partition by request_id)
             else min(struct_pack(f := source_file, l := source_line, i := coalesce(source_item, 0))) over (partition by request_id)
        end as first
    from copies
)
select *, source_file = first.f and source_line = first.l and coalesce(source_item, 0) = first.i as winner
from ranked;
