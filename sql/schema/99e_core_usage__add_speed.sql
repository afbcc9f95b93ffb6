-- core.usage.speed: the speed the request ran at, lower-cased as the log reports it (Anthropic usage.speed: standard, fast), else null; 'fast' is billed at the model's fast-mode multiple of every token price.
-- Anthropic fast mode: 6x on Claude Opus 4.6 and 4.7, 2x on Opus 4.8, Opus 5, Opus 5.5, Fable 5.2 and Mythos 5.2, the
-- prompt-caching multipliers on top (platform.claude.com fast mode; genai-prices price_comments); costs/
-- price_choices__create.sql prices it so (pipelines/lib/price_rules.py SPEED_MULTIPLIERS).
alter table core.usage add column if not exists speed varchar;
