-- marts.cache_alerts.cause: the cause in words, without the figures (rotating_preamble: where the opening breaks and on what).
alter table marts.cache_alerts add column if not exists cause varchar;
