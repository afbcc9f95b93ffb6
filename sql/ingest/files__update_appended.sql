-- Bring the manifest row of a file whose appended lines the batch staged (batch_files.appended: pipelines/ingest/
-- appends.py) up to date: its identity and size as staged now, and its accounting with the appended records added
-- (rows_in = accepted + quarantined still holds; files__apply_duplicate_counts.sql moves duplicates after).
update stage.files as f
set size_bytes = b.size_bytes, mtime_ns = b.mtime_ns, defaults_sha = b.defaults_sha, device = b.device, inode = b.inode,
    head_bytes = b.head_bytes, head_sha = b.head_sha, tail_sha = b.tail_sha, read_error = b.read_error,
    staged_version = b.staged_version, lines_staged = b.lines_staged,
    rows_in = f.rows_in + b.rows_in,
    rows_accepted = f.rows_accepted + b.rows_accepted,
    rows_quarantined = f.rows_quarantined + b.rows_quarantined,
    rows_superseded = coalesce(f.rows_superseded, 0) + b.rows_superseded,
    staged_at = now()
from (
    select
        b.source_file, b.size_bytes, b.mtime_ns, b.defaults_sha, b.device, b.inode, b.head_bytes, b.head_sha, b.tail_sha,
        b.read_error, b.staged_version, b.lines_staged,
        count(i.source_line) as rows_in,
        count(i.source_line) filter (where i.reason is null) as rows_accepted,
        count(i.source_line) filter (where i.reason is not null) as rows_quarantined,
        count(i.source_line) filter (where starts_with(i.reason, 'superseded streaming snapshot')) as rows_superseded
    from batch_files b
    left join staged_items i on i.source_file = b.source_file
    where b.appended
    group by all
) b
where f.source_file = b.source_file;
