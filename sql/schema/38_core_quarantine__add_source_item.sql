-- core.quarantine.source_item: 0 when the rejected record is a whole line; n for the n-th usage item of a container line.
alter table core.quarantine add column if not exists source_item integer;
