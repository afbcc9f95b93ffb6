-- stage.duplicate_rows mirrors core.usage (46_stage_duplicate_rows.sql): core.usage.inference_geo.
alter table stage.duplicate_rows add column if not exists inference_geo varchar;
