-- Reject accepted items whose request_id is already staged (from another file) or repeats
-- earlier in this file: duplicate request ids count once (ARCHITECTURE section 7).
update file_rows as f
set reason = 'duplicate request_id ' || f.request_id || ' (first seen in ' || d.first_seen || ')'
from (
    with
    in_file as (
        select
            request_id,
            source_line,
            source_item,
            first(source_line order by source_line, source_item) over (partition by request_id) as first_line,
            first(source_item order by source_line, source_item) over (partition by request_id) as first_item
        from file_rows
        where reason is null
    ),
    final as (
        select
            i.source_line,
            i.source_item,
            coalesce(s.source_file || ':' || s.source_line, $source_file || ':' || i.first_line
                     || case when i.first_item > 0 then ' item ' || i.first_item else '' end) as first_seen
        from in_file i
        left join stage.usage_rows s on s.request_id = i.request_id
        where s.request_id is not null or (i.source_line, i.source_item) <> (i.first_line, i.first_item)
    )
    select * from final
) as d
where f.source_line = d.source_line and f.source_item = d.source_item;
