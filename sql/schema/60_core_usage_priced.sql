-- core.usage_priced (view): each usage row with its costs, and read_discount_usd = what reading the
-- whole prompt from cache instead of paying the uncached rate would save (USD): prompt tokens x
-- (input price - cache read price), null when unpriced; on a billed row scaled by billed_to_list,
-- as its savings are (core.usage_costs). The one definition every rule and mart
-- that values a hit-rate gap uses (lost_savings_usd = rate gap x read_discount_usd).
create or replace view core.usage_priced as
select
    u.*,
    c.priced,
    c.cost_usd,
    c.list_cost_usd,
    c.cost_basis,
    c.no_cache_cost_usd,
    c.savings_usd,
    c.cache_write_premium_usd,
    c.cache_outcome,
    c.min_cacheable_tokens,
    c.input_per_mtok,
    c.cache_read_per_mtok,
    case when c.priced and c.billed_to_list is not null
         then round(usd(u.prompt_tokens, c.input_per_mtok - c.cache_read_per_mtok)::double * c.billed_to_list, 12)::decimal(38, 15)
         when c.priced then usd(u.prompt_tokens, c.input_per_mtok - c.cache_read_per_mtok) end as read_discount_usd
from core.usage u
-- a cost row carries its usage row's day: joining on it too lets a day filter on the view reach both
-- tables, so a window's read costs the window, not the whole history
join core.usage_costs c using (request_id, day);
