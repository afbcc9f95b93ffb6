-- stage.duplicate_rows mirrors core.usage (46_stage_duplicate_rows.sql): core.usage.usage_issue and unmapped_usage, added there by the same release.
alter table stage.duplicate_rows add column if not exists usage_issue varchar;
