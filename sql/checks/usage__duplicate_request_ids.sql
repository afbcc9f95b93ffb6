-- request_id values of core.usage in [$start, $end) that occur more than once anywhere. Must be 0.
-- Ids repeated inside the window are found by one hash aggregate; ids also present on days outside
-- the window by a semi-join of the other days against the window's ids (empty on a first load).
with
window_ids as (
    select request_id from core.usage where day >= $start and day < $end
),
repeated_in_window as (
    select request_id from window_ids group by all having count(*) > 1
),
also_outside as (
    select distinct u.request_id
    from core.usage u
    semi join window_ids w using (request_id)
    where u.day < $start or u.day >= $end
)
select (select count(*) from repeated_in_window)
     + (select count(*) from also_outside where request_id not in (select request_id from repeated_in_window))
    as violations;
