-- DeepSeek bills its peak rates on weekdays only (providers.md 6: "peak = 01:00-04:00 and 06:00-10:00 UTC on
-- weekdays"); the catalogue's time-of-day windows carry no weekday, so weekend requests were billed at peak, twice the
-- off-peak rate (a break test). lib/prices.WEEKDAY_WINDOWS marks such rows.
-- core.prices.weekdays_only: true = the row's time-of-day window applies Monday to Friday (UTC) only; on Saturday and Sunday the row is not a candidate.
alter table core.prices add column if not exists weekdays_only boolean;
