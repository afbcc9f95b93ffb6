-- One-time move of a warehouse from before core.usage held the staged rows itself (the day used to be
-- stored twice: every accepted record in stage.usage_rows, by file, and copied per day into
-- core.usage). Run by warehouse.prepare, in one transaction, only when stage.usage_rows exists.
--
-- File by file, so that it is safe to run again: an older release opening the warehouse later
-- re-creates stage.usage_rows (empty, or holding only the files it staged) and may rebuild days of
-- core.usage from it. Each file in the old table replaces that file's rows in core.usage (price_model
-- null until the daily asset resolves it); a file whose rows core.usage then holds more or fewer of
-- than its manifest row says is forgotten by the manifest, so this run stages it again from its log;
-- every day is marked pending (catalogue ids, costs, marts and alerts rebuilt); the old table is dropped.
delete from core.usage where source_file in (select distinct source_file from stage.usage_rows);
insert into core.usage by name select * from stage.usage_rows;
delete from stage.files f
where f.rows_accepted <> (select count(*) from core.usage u where u.source_file = f.source_file);
insert into stage.pending_days by name
select distinct day, now() as staged_at, false as dependent from core.usage where day not in (select day from stage.pending_days);
drop table stage.usage_rows;
