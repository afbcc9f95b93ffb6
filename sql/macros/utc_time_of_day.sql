-- utc_time_of_day(ts): the UTC time of day (TIME) of a finite TIMESTAMPTZ (ingest accepts only
-- 2000-01-01 .. now + 1 day), in integer microseconds. Equal to
-- (ts at time zone 'UTC')::time, which goes through the time-zone calendar: 0.64 s against 0.04 s per
-- 5M rows here (the outer modulo keeps instants before 1970 right).
create or replace macro utc_time_of_day(ts) as
    time '00:00:00' + to_microseconds(((epoch_us(ts) % 86400000000) + 86400000000) % 86400000000);
