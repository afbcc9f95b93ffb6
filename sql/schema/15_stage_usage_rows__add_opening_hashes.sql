-- stage.usage_rows.opening_hashes: hashes of the first 256, 512, 1024, ... 32768 characters of the rendered prompt (as far as it reaches). Null when the log carried no request body.
alter table stage.usage_rows add column if not exists opening_hashes varchar[];
