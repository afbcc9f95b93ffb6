-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); additive is whether the format reports
-- the uncached remainder beside the cache counts (pipelines/ingest/formats.yaml convention) or inside its prompt.
-- cache_write_5m_of(w5, w1, write): 5-minute cache writes. The 5m / 1h split wins when either is reported
-- (Anthropic); older logs without it are all 5-minute writes.
create or replace macro cache_write_5m_of(w5, w1, write) as
    case when w5 is not null or w1 is not null then coalesce(w5, 0) else coalesce(write, 0) end;
