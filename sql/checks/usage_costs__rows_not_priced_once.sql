-- Usage rows of [$start, $end) without exactly one core.usage_costs row, plus cost rows without a
-- usage row of the same request_id and day. Must be 0 (priced rows = usage rows, each on its usage
-- row's day, which every join of the two tables relies on). Set-wise: cost rows are counted per request id
-- (a hash aggregate over the window's ids) rather than by a subquery per usage row.
with
window_usage as (
    select request_id from core.usage where day >= $start and day < $end
),
cost_rows as (
    select c.request_id, count(*) as n
    from core.usage_costs c
    semi join window_usage w on w.request_id = c.request_id
    group by c.request_id
),
unpriced_or_twice as (
    select count(*) as n
    from window_usage w
    left join cost_rows c using (request_id)
    where c.n is distinct from 1
),
orphans as (
    select count(*) as n
    from core.usage_costs c
    where c.day >= $start and c.day < $end
        and not exists (select 1 from core.usage u where u.request_id = c.request_id and u.day = c.day)
)
select (select n from unpriced_or_twice) + (select n from orphans) as violations;
