-- request_id values of core.usage in [$start, $end) that occur more than once anywhere. Must be 0.
select count(*) as violations
from (
    select request_id from core.usage
    where request_id in (select request_id from core.usage where day >= $start and day < $end)
    group by request_id having count(*) > 1
);
