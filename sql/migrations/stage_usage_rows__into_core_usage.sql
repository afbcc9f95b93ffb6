-- One-time move of a warehouse from before core.usage held the staged rows itself (the day used to be
-- stored twice: every accepted record in stage.usage_rows, by file, and copied per day into
-- core.usage). The staged rows become core.usage (price_model null until resolved), every day is
-- marked pending so the next run resolves catalogue ids and rebuilds costs, marts and alerts, and
-- stage.usage_rows is dropped. Run by warehouse.prepare, in one transaction, only when that table exists.
delete from core.usage;
insert into core.usage by name select * from stage.usage_rows;
insert into stage.pending_days
select distinct day, now() as staged_at from core.usage where day not in (select day from stage.pending_days);
drop table stage.usage_rows;
