-- marts.cache_alerts.divergence_offset_tokens: the same offset in estimated tokens (characters / 4).
alter table marts.cache_alerts add column if not exists divergence_offset_tokens bigint;
