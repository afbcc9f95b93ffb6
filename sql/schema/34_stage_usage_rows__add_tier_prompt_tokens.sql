-- stage.usage_rows.tier_prompt_tokens: tokens: per-request prompt size that selects a long-context price tier (= prompt_tokens for one request; for a usage bucket, the floor of its reported context window, else 0).
alter table stage.usage_rows add column if not exists tier_prompt_tokens bigint;
