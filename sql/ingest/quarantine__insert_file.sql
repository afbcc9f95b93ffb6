-- Publish the rejected records of one file ($source_file) to core.quarantine.
insert into core.quarantine by name
select
    $source_file as source_file,
    source_line,
    source_item,
    source_format,
    reason,
    raw_excerpt,
    now() as quarantined_at
from file_rows
where reason is not null;
