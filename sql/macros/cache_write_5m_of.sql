-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); additive is whether the format reports
-- the uncached remainder beside the cache counts (pipelines/ingest/formats.yaml convention) or inside its prompt.
-- cache_write_5m_of(w5, w1, write): 5-minute cache writes. The 5m / 1h split wins when it carries tokens
-- (Anthropic); a write total whose split is missing or all zero was still billed, at the documented default
-- TTL (5 minutes: Anthropic prompt caching, "cache_control ttl defaults to 5m"): all 5-minute writes, and
-- the row says so in core.usage.usage_issue (write_split_issue).
create or replace macro cache_write_5m_of(w5, w1, write) as
    case when coalesce(w5, 0) + coalesce(w1, 0) > 0 then coalesce(w5, 0) else coalesce(write, 0) end;
