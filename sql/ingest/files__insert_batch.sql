-- Record the batch's files in the manifest (registered table batch_files: identity when staged) with
-- their row accounting before duplicate ids are resolved (files__apply_duplicate_counts.sql moves the
-- duplicates from accepted to quarantined): rows_in = accepted + quarantined; rows_superseded counts the
-- quarantined streamed snapshots (staged_items__supersede_snapshots.sql).
insert into stage.files by name
select
    b.source_file, b.size_bytes, b.mtime_ns, b.defaults_sha, b.device, b.inode, b.head_bytes, b.head_sha, b.tail_sha, b.read_error,
    b.staged_version,
    count(i.source_line) as rows_in,
    count(i.source_line) filter (where i.reason is null) as rows_accepted,
    count(i.source_line) filter (where i.reason is not null) as rows_quarantined,
    count(i.source_line) filter (where starts_with(i.reason, 'superseded streaming snapshot')) as rows_superseded,
    now() as staged_at
from batch_files b
left join staged_items i on i.source_file = b.source_file
where not b.appended
group by all;
