-- UTC days of [$start, $end) whose marts.daily_savings rows do not equal core.usage's own rows
-- (requests, prompt, cache read, cache write and output tokens): a day staged again (a late, edited or
-- rotated file) but not rebuilt since. With $built_only, days that have no marts rows yet (new days,
-- not built) are not counted. Returns the count (must be 0) and the days as ISO dates, oldest first.
with
usage_days as (
    select day, sum(request_count) as requests, sum(prompt_tokens) as prompt_tokens,
           sum(cache_read_tokens) as cache_read_tokens,
           sum(cache_write_5m_tokens + cache_write_1h_tokens) as cache_write_tokens, sum(output_tokens) as output_tokens
    from core.usage where day >= $start and day < $end group by day
),
mart_days as (
    select day, sum(requests) as requests, sum(prompt_tokens) as prompt_tokens,
           sum(cache_read_tokens) as cache_read_tokens, sum(cache_write_tokens) as cache_write_tokens,
           sum(output_tokens) as output_tokens
    from marts.daily_savings where day >= $start and day < $end group by day
),
final as (
    select coalesce(u.day, m.day) as day
    from usage_days u full outer join mart_days m using (day)
    where (m.day is not null or not $built_only)
      and (u.requests is distinct from m.requests or u.prompt_tokens is distinct from m.prompt_tokens
           or u.cache_read_tokens is distinct from m.cache_read_tokens
           or u.cache_write_tokens is distinct from m.cache_write_tokens
           or u.output_tokens is distinct from m.output_tokens)
)
select count(*) as violations, coalesce(list(day::varchar order by day), []) as days from final
