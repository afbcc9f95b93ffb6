-- The pending UTC days (stage.pending_days) as the partition ranges a run rebuilds, one row per range,
-- oldest first: first_day, last_day (UTC dates, inclusive), days (count of pending days in it) and
-- staged_at (the latest change staged in it, UTC; part of the sensor's run key, so a range changed
-- again is requested again). Pending days at most $dependent_days apart share a range: a day reads the
-- stored results of at most that many days before it (CachemeterSettings.dependent_days), so days in
-- different ranges never read each other and the ranges may be rebuilt in any order. The CLI and the
-- pending-days sensor both read this file, so both rebuild the same ranges. Days before $partitions_start (the first
-- daily partition) are left out: Dagster builds no partition before it (a warehouse whose earlier days were staged
-- before CACHEMETER_PARTITIONS_START was raised stopped every run on Dagster's invariant, a break test; the runner
-- warns and clears them, pipelines/runner.py).
with days as (
    select day, max(staged_at) as staged_at from stage.pending_days where day >= $partitions_start::date group by day
),
breaks as (
    select day, staged_at,
           case when day - lag(day) over (order by day) <= $dependent_days then 0 else 1 end as starts_range
    from days
),
numbered as (
    select day, staged_at, sum(starts_range) over (order by day) as range_no from breaks
),
final as (
    select min(day) as first_day, max(day) as last_day, count(*) as days, max(staged_at) as staged_at
    from numbered group by range_no
)
select first_day, last_day, days, staged_at from final order by first_day
