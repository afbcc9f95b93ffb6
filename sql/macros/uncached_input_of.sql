-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); additive is whether the format reports
-- the uncached remainder beside the cache counts (pipelines/ingest/formats.yaml convention) or inside its prompt.
-- uncached_input_of(additive, prompt, uncached, cache_read, w5, w1): tokens read neither from nor into the cache.
create or replace macro uncached_input_of(additive, prompt, uncached, cache_read, w5, w1) as
    case when additive then coalesce(uncached, prompt) else prompt - cache_read - w5 - w1 end;
