-- stage.files: one row per staged log file (grain: file). Files whose size and mtime are unchanged
-- are not read again; a changed file replaces all of its rows, but whole lines appended to a JSON-lines file are
-- staged beside its rows (pipelines/ingest/appends.py), which stay.
create table if not exists stage.files (
    source_file      varchar,      -- path relative to the logs root, POSIX separators
    size_bytes       bigint,       -- bytes on disk when staged
    mtime_ns         bigint,       -- modification time when staged, nanoseconds since the Unix epoch (UTC)
    rows_in          bigint,       -- records read (non-blank lines, or array elements of a .json file)
    rows_accepted    bigint,       -- records that became usage rows
    rows_quarantined bigint,       -- records rejected into core.quarantine; rows_in = accepted + quarantined
    staged_at        timestamptz   -- when the file was staged (UTC)
);
