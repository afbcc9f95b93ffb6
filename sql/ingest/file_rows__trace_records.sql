-- Accepted trace records of the current file in arrival order, for the cache replay.
select source_line, prompt_tokens, hash_ids, trace_offset_ms
from file_rows
where reason is null and hash_ids is not null
order by trace_offset_ms, source_line;
