-- marts.cost_reconciliation.prompt_rate_ratio: billed / list rate of the prompt side (uncached input, cache reads and writes together) that the priced billed rows imply (1.25 = billed 25% above list; least squares over the rows, double), null when no priced row reported a cost.
alter table marts.cost_reconciliation add column if not exists prompt_rate_ratio double;
