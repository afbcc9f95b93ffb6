-- Add records the general normaliser could not normalise within DuckDB's memory limit (registered table too_large_in:
-- source_line, source_item, reason, raw_excerpt; the excerpt names the reason only, never the record's text).
insert into file_rows (source_line, source_item, reason, raw_excerpt)
select source_line, source_item, reason, raw_excerpt from too_large_in;
