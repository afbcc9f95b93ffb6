-- stage.usage_rows.reported_cost_usd: USD the source reports as billed for this row (OpenRouter usage.cost, LiteLLM spend, Langfuse cost_details, canonical reported_cost_usd), null when it reports none.
alter table stage.usage_rows add column if not exists reported_cost_usd decimal(38, 15);
