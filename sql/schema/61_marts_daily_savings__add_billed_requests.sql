-- marts.daily_savings.billed_requests: of the priced requests, those whose cost is what their source reported as billed (cost_basis 'billed'), not the list price.
alter table marts.daily_savings add column if not exists billed_requests bigint;
