-- Usage rows as requests for the routing what-if (pipelines/lib/whatif/routing_inputs.py), in
-- arrival order, for the UTC days [$start, $end) and request times [$from, $to) (a day is read in
-- slices of time, so the sort holds one slice): the family, the prompt and the cacheable span,
-- i.e. the tokens the provider read or wrote for it (tokens; capped at the prompt).
select
    day,
    prefix_family,
    prompt_tokens,
    least(prompt_tokens, cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens) as cacheable_tokens
from core.usage
where day >= $start and day < $end and ts >= $from and ts < $to and prompt_tokens > 0
order by ts, source_file, source_line, request_id;  -- requests logged at the same time: in log order
