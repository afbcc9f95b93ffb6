-- The fast pass of usage_costs__rows_not_priced_once.sql (checks.FAST_PASSES): days of [$start, $end) whose usage
-- rows and cost rows differ as multisets of (request_id, day, the five priced token classes, reported_cost_usd),
-- told by each day's row count and sum of 64-bit hashes of those columns (an exact HUGEINT sum) on each table.
-- 0 when every usage row has exactly one cost row of the same quantities and no cost row is extra: the two
-- multisets are then equal, so their counts and sums are. The converse holds when the window's request ids are
-- unique in core.usage (request_id_unique, a blocking check of core.usage, the asset upstream of every one that
-- runs this: a usage row repeated with its cost row repeated leaves the multisets equal, where the predicate counts
-- each copy), except when two different multisets of rows hash to the same count and sum: for rows a bug removed,
-- repeated or changed, that needs their hashes to cancel exactly, about one chance in 2^64. So 0 passes the check;
-- anything else runs the exact predicate, which counts the violations and names them. Two scans of eight columns
-- and a per-day aggregate, no join and no hash table of ids (bench/README.md, "The priced-once check without a join").
with
sides as (
    select 1 as side, request_id, day, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens,
           cache_write_1h_tokens, output_tokens, reported_cost_usd
    from core.usage where day >= $start and day < $end
    union all
    select -1 as side, request_id, day, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens,
           cache_write_1h_tokens, output_tokens, reported_cost_usd
    from core.usage_costs where day >= $start and day < $end
),
days as (
    -- per day: usage rows minus cost rows, and the difference of their hash sums
    select day, sum(side) as rows_apart,
           sum(hash(request_id, day, uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens,
                    cache_write_1h_tokens, output_tokens, reported_cost_usd)::hugeint * side) as digest_apart
    from sides group by day
)
select count(*) as violations from days where rows_apart <> 0 or digest_apart <> 0;
