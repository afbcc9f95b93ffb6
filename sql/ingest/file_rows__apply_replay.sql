-- Set cache reads of trace records from the cache replay (registered table replay_in:
-- source_line, cache_read_tokens); the uncached remainder is the rest of the prompt.
update file_rows as f
set cache_read_tokens = r.cache_read_tokens,
    uncached_input_tokens = f.prompt_tokens - r.cache_read_tokens
from replay_in as r
where f.source_line = r.source_line and f.source_item = 0;
