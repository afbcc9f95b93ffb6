-- file_duplicates: the accepted items of the file being staged (file_items) whose request_id is
-- already staged (from another file) or repeats earlier in this file, with the quarantine reason:
-- duplicate request ids count once (ARCHITECTURE section 7). Only the ids that repeat in the file
-- or are already staged are looked at row by row (a hash aggregate and a semi-join find them).
create or replace temp table file_duplicates as
with
accepted as (
    select source_line, source_item, request_id from file_items where reason is null
),
repeated as (
    select request_id, min(struct_pack(line := source_line, item := source_item)) as first
    from accepted
    group by request_id
    having count(*) > 1
),
staged as (
    select s.request_id, s.source_file, s.source_line
    from stage.usage_rows s
    semi join accepted a on a.request_id = s.request_id
),
final as (
    select
        a.source_line,
        a.source_item,
        'duplicate request_id ' || a.request_id || ' (first seen in '
            || coalesce(s.source_file || ':' || s.source_line, $source_file || ':' || r.first.line
                        || case when r.first.item > 0 then ' item ' || r.first.item else '' end) || ')' as reason
    from accepted a
    left join repeated r using (request_id)
    left join staged s using (request_id)
    where s.request_id is not null or (r.request_id is not null and (a.source_line, a.source_item) <> (r.first.line, r.first.item))
)
select * from final;
