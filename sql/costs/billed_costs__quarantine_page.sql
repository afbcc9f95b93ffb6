-- A stored cost-report page that cannot be loaded into core.billed_costs (a page that failed to fetch,
-- or a body not of the documented shape), kept in core.quarantine as one record (line 0: the whole page)
-- with the reason; its day keeps the rows it had. $file: the page, relative to the logs root.
insert into core.quarantine (source_file, source_line, source_format, reason, raw_excerpt, quarantined_at)
values ($file, 0, $source, $reason, null, now());
