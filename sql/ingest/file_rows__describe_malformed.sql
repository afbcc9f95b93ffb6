-- Replace the generic 'malformed JSON' reason with where parsing failed, and set the privacy-safe
-- excerpt (registered table malformed_in: source_line, reason, raw_excerpt).
update file_rows as f
set reason = m.reason, raw_excerpt = m.raw_excerpt
from malformed_in as m
where f.source_line = m.source_line and f.source_item = 0;
