-- stage.usage_rows.divergence_offset_chars: characters shared with the previous request of the same tenant/app in the file before the texts differ. Null when the log carried no request body.
alter table stage.usage_rows add column if not exists divergence_offset_chars bigint;
