-- core.usage.inference_geo: where inference ran, lower-cased as the log reports it (Anthropic usage.inference_geo: global, us), else null; 'us' is billed at 1.1x every token price.
-- Anthropic bills US-only inference at 1.1x on Claude Opus 4.6 and later (providers.md 3.3; platform.claude.com data
-- residency); costs/price_choices__create.sql prices it so (pipelines/lib/price_rules.py GEO_MULTIPLIERS).
alter table core.usage add column if not exists inference_geo varchar;
