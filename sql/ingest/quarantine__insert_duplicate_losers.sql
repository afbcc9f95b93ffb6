-- Quarantine every copy of a touched id that the rule does not keep (duplicate_copies), naming the kept one.
insert into core.quarantine by name
select
    source_file,
    source_line,
    coalesce(source_item, 0) as source_item,
    source_format,
    'duplicate request_id ' || request_id || ' (first seen in ' || first.f || ':' || first.l
        || case when first.i > 0 then ' item ' || first.i else '' end || ')' as reason,
    null::varchar as raw_excerpt,
    request_id as duplicate_request_id,
    now() as quarantined_at
from duplicate_copies
where not winner;
