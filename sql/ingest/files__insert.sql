-- Record one staged file in the manifest with its row accounting (rows_in = accepted + quarantined).
insert into stage.files by name
select
    $source_file as source_file,
    $size_bytes as size_bytes,
    $mtime_ns as mtime_ns,
    $defaults_sha as defaults_sha,
    count(*) as rows_in,
    count(*) filter (where f.reason is null and d.reason is null) as rows_accepted,
    count(*) filter (where f.reason is not null or d.reason is not null) as rows_quarantined,
    now() as staged_at
from file_items f
left join file_duplicates d on d.source_line = f.source_line and d.source_item = f.source_item;
