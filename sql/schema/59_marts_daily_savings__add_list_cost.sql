-- marts.daily_savings.list_cost_usd: USD at list rates (catalogue or --prices) for the priced rows, exact; cost_usd - list_cost_usd is what the bills of rows that report one add above the list.
alter table marts.daily_savings add column if not exists list_cost_usd decimal(38, 15);
