-- stage.files.head_sha: sha256 (hex) of the file's first head_bytes bytes when staged: a file whose start still hashes to it and is no smaller is the same file grown (appended, renamed, rotated away); a file whose start differs or that shrank is a new generation.
alter table stage.files add column if not exists head_sha varchar;
