-- marts.cost_reconciliation: what sources say was billed against what cachemeter computed for the same
-- rows (grain: day, provider, model). Only usage rows that carry a reported cost take part (OpenRouter
-- usage.cost, LiteLLM spend, Langfuse cost_details, canonical or envelope reported_cost_usd).
create table if not exists marts.cost_reconciliation (
    day                      date,            -- UTC day
    provider                 varchar,         -- cachemeter provider name
    model                    varchar,         -- model as reported
    rows_reported            bigint,          -- usage rows whose source reported a billed cost
    requests                 bigint,          -- requests those rows stand for (sum of request_count)
    unpriced_rows            bigint,          -- of which cachemeter has no price (left out of both sums)
    reported_cost_usd        decimal(38, 15), -- USD the sources say was billed (priced rows)
    computed_cost_usd        decimal(38, 15), -- USD cachemeter computes for the same rows at list rates (catalogue or --prices; core.usage_costs.list_cost_usd)
    difference_usd           decimal(38, 15), -- USD: reported - computed (positive: billed more than computed)
    relative_difference      double           -- difference_usd / reported_cost_usd (null when nothing was reported)
);
