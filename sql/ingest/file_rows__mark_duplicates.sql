-- Reject accepted items whose request_id is already staged (from another file) or repeats
-- earlier in this file: duplicate request ids count once (ARCHITECTURE section 7).
-- Only the ids that repeat in the file or are already staged are looked at row by row (a hash
-- aggregate and a semi-join find them; most files have none).
update file_rows as f
set reason = 'duplicate request_id ' || f.request_id || ' (first seen in ' || d.first_seen || ')'
from (
    with
    repeated as (
        select request_id, min(struct_pack(line := source_line, item := source_item)) as first
        from file_rows
        where reason is null
        group by request_id
        having count(*) > 1
    ),
    staged as (
        select s.request_id, s.source_file, s.source_line
        from stage.usage_rows s
        semi join file_rows f on f.request_id = s.request_id and f.reason is null
    ),
    final as (
        select
            f.source_line,
            f.source_item,
            coalesce(s.source_file || ':' || s.source_line, $source_file || ':' || r.first.line
                     || case when r.first.item > 0 then ' item ' || r.first.item else '' end) as first_seen
        from file_rows f
        left join repeated r using (request_id)
        left join staged s using (request_id)
        where f.reason is null
            and (s.request_id is not null or (r.request_id is not null and (f.source_line, f.source_item) <> (r.first.line, r.first.item)))
    )
    select * from final
) as d
where f.source_line = d.source_line and f.source_item = d.source_item;
