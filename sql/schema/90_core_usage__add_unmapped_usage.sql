-- core.usage.unmapped_usage: JSON object, body path -> number, of every usage key above zero that the row's format neither maps to a token class nor declares informational (pipelines/lib/formats.yaml usage_keys), e.g. {"usage.prompt_tokens_details.audio_tokens": 12}; the data_quality rule reports them per day; null when none.
alter table core.usage add column if not exists unmapped_usage json;
