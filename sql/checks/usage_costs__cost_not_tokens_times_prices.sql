-- Priced rows of [$start, $end) whose list_cost_usd is not exactly the sum of tokens x applied prices,
-- whose cost_usd is not the billed amount where the row reports one (else the list cost), whose
-- cost_basis says otherwise, whose savings are not no_cache_cost - cost, or unpriced rows that carry a
-- cost. Must be 0. Runs once per part of the window, a large day once per bucket of its ids ($bucket of
-- $buckets, by hash(request_id): partitions.window_parts), so the join's hash table holds about a million rows.
select count(*) as violations
from core.usage_costs c
join core.usage u using (request_id, day)  -- (day: the window's rows only)
where c.day >= $start and c.day < $end and hash(c.request_id) % $buckets::ubigint = $bucket::ubigint
  and (
      (c.priced and (
          c.list_cost_usd is distinct from usd(u.uncached_input_tokens, coalesce(c.input_per_mtok, 0))
                        + usd(u.cache_read_tokens, coalesce(c.cache_read_per_mtok, 0))
                        + usd(u.cache_write_5m_tokens, coalesce(c.cache_write_5m_per_mtok, 0))
                        + usd(u.cache_write_1h_tokens, coalesce(c.cache_write_1h_per_mtok, 0))
                        + usd(u.output_tokens, coalesce(c.output_per_mtok, 0))
          or c.cost_usd is distinct from coalesce(u.reported_cost_usd, c.list_cost_usd)
          or c.cost_basis is distinct from case when u.reported_cost_usd is null then 'list' else 'billed' end
          or c.savings_usd <> c.no_cache_cost_usd - c.cost_usd))
      or (not c.priced and (c.cost_usd is not null or c.savings_usd is not null or c.list_cost_usd is not null))
  );
