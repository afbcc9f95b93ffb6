-- Rows of core.usage in [$start, $end) whose token classes are negative or do not sum to
-- prompt_tokens (ARCHITECTURE section 3). Must be 0.
select count(*) as violations
from core.usage
where day >= $start and day < $end
  and (prompt_tokens <> uncached_input_tokens + cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens
       or least(uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, output_tokens) < 0
       or reasoning_tokens > output_tokens);
