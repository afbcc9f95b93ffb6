-- Publish the rejected records of one file ($source_file) to core.quarantine: those the normaliser
-- rejected (file_items.reason) and accepted ones whose request_id is a duplicate (file_duplicates).
insert into core.quarantine by name
select
    $source_file as source_file,
    f.source_line,
    f.source_item,
    f.source_format,
    coalesce(f.reason, d.reason) as reason,
    f.raw_excerpt,
    case when f.reason is null then f.request_id end as duplicate_request_id,
    now() as quarantined_at
from file_items f
left join file_duplicates d on d.source_line = f.source_line and d.source_item = f.source_item
where f.reason is not null or d.reason is not null;
