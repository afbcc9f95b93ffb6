-- marts.billed_cost_reconciliation (view): per UTC day and provider with a cost report
-- (core.billed_costs), what the provider billed against what cachemeter computed for the same day's
-- usage (core.usage_costs). All money USD, exact DECIMAL. billed_usd: every billed line; billed_tokens_usd:
-- the token lines (cost_type = 'tokens'), the part core.usage_costs prices; computed_usd: the sum of
-- core.usage_costs.cost_usd (billed where the source reports it, else list), list_usd the same at list
-- rates; difference_usd = billed_tokens_usd - computed_usd (positive: billed more than computed);
-- difference_share = difference_usd / billed_tokens_usd (a share, double; null when nothing was billed for tokens);
-- unpriced_rows: usage rows of the day cachemeter could not price (their cost is missing from computed_usd).
-- A day billed without usage rows has null computed_usd.
create or replace view marts.billed_cost_reconciliation as
with billed as (
    select day, provider, count(*) as billed_lines, sum(billed_usd) as billed_usd,
           coalesce(sum(billed_usd) filter (where cost_type = 'tokens'), 0) as billed_tokens_usd
    from core.billed_costs
    group by day, provider
),
computed as (
    select day, provider, sum(cost_usd) as computed_usd, sum(list_cost_usd) as list_usd,
           count(*) filter (where not priced) as unpriced_rows
    from core.usage_costs
    where provider in (select distinct provider from core.billed_costs)
    group by day, provider
)
select
    b.day,
    b.provider,
    b.billed_lines,
    b.billed_usd,
    b.billed_tokens_usd,
    c.computed_usd,
    c.list_usd,
    b.billed_tokens_usd - c.computed_usd as difference_usd,
    (b.billed_tokens_usd - c.computed_usd) / nullif(b.billed_tokens_usd, 0) as difference_share,
    coalesce(c.unpriced_rows, 0) as unpriced_rows
from billed b
left join computed c using (day, provider);
