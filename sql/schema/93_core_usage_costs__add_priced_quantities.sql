-- The quantities a cost row priced, copied from its core.usage row as it was priced (as a FOCUS charge
-- row states its ConsumedQuantity): the cost check verifies cost = these tokens x the applied rates on
-- the cost table alone, and the priced-once check that they equal the usage row's, in the one join of
-- the two tables it makes anyway (bench/README.md, "The cost checks in one join").
-- core.usage_costs.uncached_input_tokens: tokens priced at input_per_mtok (core.usage.uncached_input_tokens).
alter table core.usage_costs add column if not exists uncached_input_tokens bigint;
-- core.usage_costs.cache_read_tokens: tokens priced at cache_read_per_mtok (core.usage.cache_read_tokens).
alter table core.usage_costs add column if not exists cache_read_tokens bigint;
-- core.usage_costs.cache_write_5m_tokens: tokens priced at cache_write_5m_per_mtok (core.usage.cache_write_5m_tokens).
alter table core.usage_costs add column if not exists cache_write_5m_tokens bigint;
-- core.usage_costs.cache_write_1h_tokens: tokens priced at cache_write_1h_per_mtok (core.usage.cache_write_1h_tokens).
alter table core.usage_costs add column if not exists cache_write_1h_tokens bigint;
-- core.usage_costs.output_tokens: tokens priced at output_per_mtok (core.usage.output_tokens).
alter table core.usage_costs add column if not exists output_tokens bigint;
-- core.usage_costs.reported_cost_usd: USD the source billed for the row, null when it reports none (core.usage.reported_cost_usd; cost_usd where cost_basis = 'billed').
alter table core.usage_costs add column if not exists reported_cost_usd decimal(38, 15);
