-- Publish the records of the batch the normaliser rejected (staged_items.reason) to core.quarantine.
insert into core.quarantine by name
select
    f.source_file,
    f.source_line,
    f.source_item,
    f.source_format,
    f.reason,
    f.raw_excerpt,
    null::varchar as duplicate_request_id,
    now() as quarantined_at
from staged_items f
where f.reason is not null;
