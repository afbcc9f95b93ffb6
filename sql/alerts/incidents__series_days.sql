-- Every stored series day, the evidence of the hit-rate incident rule (pipelines/lib/incidents.py),
-- grouped by series and in day order.
select provider, model, tenant, app, day, requests, prompt_tokens, cache_read_tokens, read_discount_usd
from marts.series_days
where prompt_tokens > 0
order by provider, model nulls first, tenant, app, day;
