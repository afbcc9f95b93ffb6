-- stage.duplicate_rows mirrors core.usage (46_stage_duplicate_rows.sql): core.usage.unmapped_usage.
alter table stage.duplicate_rows add column if not exists unmapped_usage json;
