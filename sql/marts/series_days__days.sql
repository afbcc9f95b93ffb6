-- The UTC days series_days__insert_window.sql aggregates for the window [$start, $end): the window's days with
-- usage, and any day of the trailing 2 x $alert_baseline_days + 1 days (what the rotating-preamble rule reads)
-- that has usage but no series rows yet (a warehouse from before that table, or a first run). DATE, ascending.
select distinct day from core.usage
where day >= ($start::date - to_days(2 * $alert_baseline_days + 1))::date and day < $end
    and (day >= $start or day not in (select distinct day from marts.series_days))
order by day;
