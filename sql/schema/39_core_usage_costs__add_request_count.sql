-- core.usage_costs.request_count: requests the priced usage row stands for (copied from core.usage: 1 per request, N for a usage bucket), so per-request cost checks read the cost table alone.
alter table core.usage_costs add column if not exists request_count bigint;
