-- Each UTC day of [$start, $end) that has usage rows to replay for marts.whatif_routing, with a digest
-- of every input its replay reads: the rows routing__usage_requests.sql selects (same filter), each
-- hashed with its ts, source file and line and request_id (its replay order) and its family, prompt and cacheable tokens.
-- requests: rows; inputs: 'rows:sum:xor' of the row hashes (equal digests: the same rows in the same
-- order, unless 64-bit hashes collide twice at once). One scan of the window's rows.
with rows as (
    select
        day,
        hash(ts, source_file, source_line, request_id, prefix_family, prompt_tokens,
             least(prompt_tokens, cache_read_tokens + cache_write_5m_tokens + cache_write_1h_tokens)) as h
    from core.usage
    where day >= $start and day < $end and prompt_tokens > 0
)
select day, count(*)::varchar || ':' || sum(h::hugeint)::varchar || ':' || bit_xor(h)::varchar as inputs
from rows
group by day
order by day
