-- Usage rows of [$start, $end) without exactly one core.usage_costs row, plus cost rows without a
-- usage row. Must be 0 (priced rows = usage rows).
select
    (select count(*) from core.usage u where u.day >= $start and u.day < $end
       and (select count(*) from core.usage_costs c where c.request_id = u.request_id) <> 1)
    + (select count(*) from core.usage_costs c where c.day >= $start and c.day < $end
       and not exists (select 1 from core.usage u where u.request_id = c.request_id)) as violations;
