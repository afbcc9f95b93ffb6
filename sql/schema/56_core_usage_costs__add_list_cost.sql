-- core.usage_costs.list_cost_usd: USD at the catalogue's (or --prices) list rates: every class's tokens x its rate, exact (FOCUS ListCost); null when priced = false. cost_usd is the billed amount where the row carries one (cost_basis 'billed'), else this.
alter table core.usage_costs add column if not exists list_cost_usd decimal(38, 15);
