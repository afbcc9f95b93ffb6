-- request_id values of core.usage in [$start, $end) that occur more than once anywhere. Must be 0.
-- Runs once per bucket of ids (partitions.id_buckets: $bucket of $buckets, by hash(request_id)); every
-- copy of an id is in the same bucket, so the buckets' counts add up to the window's.
-- Ids repeated inside the window are found by one hash aggregate; ids also present on days outside
-- the window by a semi-join of the other days against the window's ids (empty on a first load).
-- The window's rows are read twice rather than shared through a CTE: a CTE named twice is
-- materialised, every id of the bucket copied once more (1.43 GB against 1.25 GB over 20M ids).
with
repeated_in_window as (
    select request_id from core.usage
    where day >= $start and day < $end and hash(request_id) % $buckets::ubigint = $bucket::ubigint
    group by all having count(*) > 1
),
also_outside as (
    select u.request_id
    from core.usage u
    semi join (
        select request_id from core.usage
        where day >= $start and day < $end and hash(request_id) % $buckets::ubigint = $bucket::ubigint
    ) w using (request_id)
    where (u.day < $start or u.day >= $end) and hash(u.request_id) % $buckets::ubigint = $bucket::ubigint
)
select count(*) as violations
from (select request_id from repeated_in_window union select request_id from also_outside);
