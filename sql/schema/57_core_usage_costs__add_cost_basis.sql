-- core.usage_costs.cost_basis: where cost_usd comes from: 'billed' (the source reported what was billed, core.usage.reported_cost_usd) or 'list' (catalogue rates x tokens); null when priced = false.
alter table core.usage_costs add column if not exists cost_basis varchar;
