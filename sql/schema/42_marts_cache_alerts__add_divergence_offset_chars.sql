-- marts.cache_alerts.divergence_offset_chars: characters of the shared opening before requests diverge (rotating_preamble, when bodies are logged).
alter table marts.cache_alerts add column if not exists divergence_offset_chars bigint;
