-- Usage rows of [$start, $end) without exactly one core.usage_costs row of the same request_id and
-- day, plus cost rows of the window without such a usage row. Must be 0 (priced rows = usage rows,
-- each on its usage row's day, which every join of the two tables relies on). Set-wise, in one pass:
-- the window's cost rows are counted per (request_id, day) and fully joined to the window's usage
-- rows (a per-row subquery, or a semi-join plus a separate anti-join, costs three times as much).
-- Runs once per part of the window, a large day once per bucket of its ids ($bucket of $buckets, by
-- hash(request_id): partitions.window_parts), so its hash table holds about a million rows at most.
with
window_usage as (
    select request_id, day from core.usage
    where day >= $start and day < $end and hash(request_id) % $buckets::ubigint = $bucket::ubigint
),
window_costs as (
    select request_id, day, count(*) as n
    from core.usage_costs
    where day >= $start and day < $end and hash(request_id) % $buckets::ubigint = $bucket::ubigint
    group by all
)
select count(*) as violations
from window_usage u
full join window_costs c using (request_id, day)
where u.request_id is null      -- a cost row without its usage row
   or c.n is distinct from 1;   -- a usage row priced never or twice
