-- Usage rows of [$start, $end) without exactly one core.usage_costs row of the same request_id and
-- day that priced the usage row's very tokens and billed amount, plus cost rows of the window without
-- such a usage row. Must be 0 (priced rows = usage rows, each on its usage row's day, which every join of
-- the two tables relies on; and the cost check, on the cost table alone, checks what this one matches). Set-wise, in one pass:
-- the window's cost rows are counted per (request_id, day) and fully joined to the window's usage
-- rows (a per-row subquery, or a semi-join plus a separate anti-join, costs three times as much).
-- Runs once per part of the window, a large day once per bucket of its ids ($bucket of $buckets, by
-- hash(request_id): partitions.window_parts), so its hash table holds about a million rows at most.
with
window_usage as (
    select request_id, day, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens,
           output_tokens, reported_cost_usd
    from core.usage
    where day >= $start and day < $end and hash(request_id) % $buckets::ubigint = $bucket::ubigint
),
window_costs as (
    select request_id, day, count(*) as n,
           any_value(uncached_input_tokens) as uncached_input_tokens, any_value(cache_read_tokens) as cache_read_tokens,
           any_value(cache_write_5m_tokens) as cache_write_5m_tokens, any_value(cache_write_1h_tokens) as cache_write_1h_tokens,
           any_value(output_tokens) as output_tokens, any_value(reported_cost_usd) as reported_cost_usd
    from core.usage_costs
    where day >= $start and day < $end and hash(request_id) % $buckets::ubigint = $bucket::ubigint
    group by request_id, day
)
select count(*) as violations
from window_usage u
full join window_costs c using (request_id, day)
where u.request_id is null      -- a cost row without its usage row
   or c.n is distinct from 1    -- a usage row priced never or twice
   -- or priced from other quantities than the usage row's (the cost check verifies the cost row's own)
   or c.uncached_input_tokens is distinct from u.uncached_input_tokens
   or c.cache_read_tokens is distinct from u.cache_read_tokens
   or c.cache_write_5m_tokens is distinct from u.cache_write_5m_tokens
   or c.cache_write_1h_tokens is distinct from u.cache_write_1h_tokens
   or c.output_tokens is distinct from u.output_tokens
   or c.reported_cost_usd is distinct from u.reported_cost_usd;
