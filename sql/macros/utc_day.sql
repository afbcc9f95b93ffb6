-- utc_day(ts): the UTC calendar day (DATE) of a finite TIMESTAMPTZ, in integer microseconds. Equal to
-- (ts at time zone 'UTC')::date, which goes through the time-zone calendar: 0.53 s against 0.09 s per
-- 5M rows here (floored, so instants before 1970 fall on their own day; null stays null). Infinite
-- instants give null (ingest accepts only 2000-01-01 .. now + 1 day).
create or replace macro utc_day(ts) as
    date '1970-01-01' + ((epoch_us(ts) - (((epoch_us(ts) % 86400000000) + 86400000000) % 86400000000))
                         // 86400000000)::integer;
