-- Requests per prefix family of the UTC days [$start, $end) that the routing what-if replays
-- (the rows of routing__usage_requests.sql): prefix_hash_split_hot finds its hot family from them
-- before the day's first request (pipelines/lib/whatif/routing.py, CardAssigner).
select prefix_family, count(*) as requests
from core.usage
where day >= $start and day < $end and prompt_tokens > 0
group by prefix_family;
