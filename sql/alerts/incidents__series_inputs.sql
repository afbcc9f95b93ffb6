-- Each series of marts.series_days with the inputs its lifecycle reads (pipelines/lib/incidents.py), in
-- the order the pass judges series: days_digest ('days:sum:xor' of a hash of each day's figures, the
-- rows incidents__series_days.sql reads), days and complete_days (days up to $last_complete, a date
-- or null; later days are held).
with days as (
    select provider, model, tenant, app, day,
           hash(day, requests, prompt_tokens, cache_read_tokens, read_discount_usd) as h
    from marts.series_days
    where prompt_tokens > 0
)
select provider, model, tenant, app,
       count(*)::varchar || ':' || sum(h::hugeint)::varchar || ':' || bit_xor(h)::varchar as days_digest,
       count(*) as days,
       count(*) filter (where day <= $last_complete::date) as complete_days
from days
group by provider, model, tenant, app
order by provider, model nulls first, tenant, app
