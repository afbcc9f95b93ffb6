-- stage.duplicate_rows mirrors core.usage (46_stage_duplicate_rows.sql): core.usage.ttft_ms, added there by the same release.
alter table stage.duplicate_rows add column if not exists ttft_ms decimal(18, 3);
