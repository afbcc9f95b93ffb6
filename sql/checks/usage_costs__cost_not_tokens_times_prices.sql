-- Priced rows of [$start, $end) whose list_cost_usd is not exactly the sum of tokens x applied prices,
-- whose cost_usd is not the billed amount where the row reports one (else the list cost), whose
-- cost_basis says otherwise, whose savings are not no_cache_cost - cost, or unpriced rows that carry a
-- cost. Must be 0. On the cost table alone: each cost row carries the quantities it priced and the
-- billed amount (93_core_usage_costs__add_priced_quantities.sql), and the priced-once check
-- (usage_costs__rows_not_priced_once.sql) that they are its usage row's.
select count(*) as violations
from core.usage_costs
where day >= $start and day < $end
  and (
      (priced and (
          list_cost_usd is distinct from usd(uncached_input_tokens, coalesce(input_per_mtok, 0))
                        + usd(cache_read_tokens, coalesce(cache_read_per_mtok, 0))
                        + usd(cache_write_5m_tokens, coalesce(cache_write_5m_per_mtok, 0))
                        + usd(cache_write_1h_tokens, coalesce(cache_write_1h_per_mtok, 0))
                        + usd(output_tokens, coalesce(output_per_mtok, 0))
          or cost_usd is distinct from coalesce(reported_cost_usd, list_cost_usd)
          or cost_basis is distinct from case when reported_cost_usd is null then 'list' else 'billed' end
          or savings_usd <> no_cache_cost_usd - cost_usd))
      or (not priced and (cost_usd is not null or savings_usd is not null or list_cost_usd is not null))
  );
