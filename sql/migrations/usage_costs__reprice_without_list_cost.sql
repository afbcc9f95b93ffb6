-- Bring a warehouse priced before core.usage_costs.list_cost_usd (billed cost as the truth), or before
-- the cost rows carried the quantities they priced (93_core_usage_costs__add_priced_quantities.sql), up
-- to date: every day holding a priced row without a list cost, or a cost row without its tokens, is
-- marked pending, so the next run reprices it (and rebuilds its marts). Run by warehouse.prepare; safe to
-- repeat (a repriced day has none).
insert into stage.pending_days by name
select distinct day, now() as staged_at, false as dependent
from core.usage_costs
where ((priced and list_cost_usd is null)
       or (uncached_input_tokens is null and cache_read_tokens is null and cache_write_5m_tokens is null
           and cache_write_1h_tokens is null and output_tokens is null))
  and day not in (select day from stage.pending_days where not dependent);
