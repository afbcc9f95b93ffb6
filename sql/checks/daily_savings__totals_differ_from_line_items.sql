-- Days of [$start, $end) where marts.daily_savings does not equal the sum of its line items in
-- core.usage / core.usage_costs exactly (requests, tokens, billed and list cost, savings). Must be 0.
with
mart as (
    select day, sum(requests) as requests, sum(prompt_tokens) as prompt_tokens, sum(cost_usd) as cost_usd,
           sum(list_cost_usd) as list_cost_usd, sum(savings_usd) as savings_usd
    from marts.daily_savings where day >= $start and day < $end group by day
),
items as (
    select u.day, sum(u.request_count) as requests, sum(u.prompt_tokens) as prompt_tokens,
           coalesce(sum(c.cost_usd), 0) as cost_usd, coalesce(sum(c.list_cost_usd), 0) as list_cost_usd,
           coalesce(sum(c.savings_usd), 0) as savings_usd
    from core.usage u join core.usage_costs c using (request_id, day)  -- (day: the window's rows only)
    where u.day >= $start and u.day < $end group by u.day
)
select count(*) as violations
from mart m full outer join items i using (day)
where m.requests is distinct from i.requests or m.prompt_tokens is distinct from i.prompt_tokens
   or m.cost_usd is distinct from i.cost_usd or m.list_cost_usd is distinct from i.list_cost_usd
   or m.savings_usd is distinct from i.savings_usd;
