-- Reject accepted records whose request_id is already staged (from another file) or repeats
-- earlier in this file: duplicate request ids count once (ARCHITECTURE section 7).
update file_rows as f
set reason = 'duplicate request_id ' || f.request_id || ' (first seen in ' || d.first_seen || ')'
from (
    with
    in_file as (
        select
            request_id,
            source_line,
            min(source_line) over (partition by request_id) as first_line
        from file_rows
        where reason is null
    ),
    final as (
        select
            i.source_line,
            coalesce(s.source_file || ':' || s.source_line, $source_file || ':' || i.first_line) as first_seen
        from in_file i
        left join stage.usage_rows s on s.request_id = i.request_id
        where s.request_id is not null or i.source_line <> i.first_line
    )
    select * from final
) as d
where f.source_line = d.source_line;
