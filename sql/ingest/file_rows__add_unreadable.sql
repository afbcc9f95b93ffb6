-- Add records the reader could not decode (registered table unreadable_in: source_line, reason, raw_excerpt).
insert into file_rows (source_line, reason, raw_excerpt)
select source_line, reason, raw_excerpt from unreadable_in;
