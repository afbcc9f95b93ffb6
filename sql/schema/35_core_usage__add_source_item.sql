-- core.usage.source_item: 0 when the row is a whole line of source_file; n when it is the n-th usage item of a container line (usage-report page, OTLP batch).
alter table core.usage add column if not exists source_item integer;
