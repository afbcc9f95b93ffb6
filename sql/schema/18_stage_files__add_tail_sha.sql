-- stage.files.tail_sha: sha256 (hex) of the last (up to 4,096) bytes of the staged file's size_bytes (plain files; null for gzip and unreadable files): a file that continues this one must still hold those bytes at the same place, so a file sharing only its start (same first 4 KB, another tail) is not taken for it.
alter table stage.files add column if not exists tail_sha varchar;
