-- Usage rows of [$start, $end) without exactly one core.usage_costs row of the same request_id and
-- day, plus cost rows of the window without such a usage row. Must be 0 (priced rows = usage rows,
-- each on its usage row's day, which every join of the two tables relies on). Set-wise, in one pass:
-- the window's cost rows are counted per (request_id, day) and fully joined to the window's usage
-- rows (a per-row subquery, or a semi-join plus a separate anti-join, costs three times as much).
with
window_usage as (
    select request_id, day from core.usage where day >= $start and day < $end
),
window_costs as (
    select request_id, day, count(*) as n
    from core.usage_costs
    where day >= $start and day < $end
    group by all
)
select count(*) as violations
from window_usage u
full join window_costs c using (request_id, day)
where u.request_id is null      -- a cost row without its usage row
   or c.n is distinct from 1;   -- a usage row priced never or twice
