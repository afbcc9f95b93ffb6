-- marts.cost_reconciliation.output_rate_ratio: billed / list rate of output tokens that the priced billed rows imply (as prompt_rate_ratio).
alter table marts.cost_reconciliation add column if not exists output_rate_ratio double;
