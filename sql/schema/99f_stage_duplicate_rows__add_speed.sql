-- stage.duplicate_rows mirrors core.usage (46_stage_duplicate_rows.sql): core.usage.speed.
alter table stage.duplicate_rows add column if not exists speed varchar;
