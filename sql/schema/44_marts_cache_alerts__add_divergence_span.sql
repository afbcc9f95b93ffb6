-- marts.cache_alerts.divergence_span: shape of the changing value (character classes, length, guess), never the text.
alter table marts.cache_alerts add column if not exists divergence_span varchar;
