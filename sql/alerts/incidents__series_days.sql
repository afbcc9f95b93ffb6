-- The stored days of the series in the registered relation series_keys (provider, model, tenant, app),
-- the evidence of the hit-rate incident rule (pipelines/lib/incidents.py), grouped by series and in
-- day order.
-- A day of usage buckets that report no request count (an Anthropic usage report, for one) has requests
-- null: it counts as none toward a pool's minimum of requests (pipelines/lib/incidents.py), never as a failure.
select d.provider, d.model, d.tenant, d.app, d.day, coalesce(d.requests, 0) as requests, d.prompt_tokens, d.cache_read_tokens, d.read_discount_usd
from marts.series_days d
where d.prompt_tokens > 0
  and exists (select 1 from series_keys k
              where d.provider is not distinct from k.provider and d.model is not distinct from k.model
                and d.tenant is not distinct from k.tenant and d.app is not distinct from k.app)
order by d.provider, d.model nulls first, d.tenant, d.app, d.day;
