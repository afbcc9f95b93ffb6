-- The first UTC day series_days__insert_window.sql aggregates for the window [$start, $end): $start, or an
-- earlier day of the trailing 2 x $alert_baseline_days + 1 days that has usage but no series rows yet
-- (DATE; null when the window and its lookback hold no usage).
select min(day) as first
from (
    select distinct day from core.usage
    where day >= ($start::date - to_days(2 * $alert_baseline_days + 1))::date and day < $end
        and (day >= $start or day not in (select distinct day from marts.series_days))
);
