-- stage.files.head_bytes: bytes of the file's start (decompressed for gzip, at most 4,096) that head_sha covers.
alter table stage.files add column if not exists head_bytes bigint;
