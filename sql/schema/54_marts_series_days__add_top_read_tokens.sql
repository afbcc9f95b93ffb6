-- marts.series_days.top_read_tokens: tokens, the day's most common cache-read size among its hits (where reads stop).
alter table marts.series_days add column if not exists top_read_tokens bigint;
