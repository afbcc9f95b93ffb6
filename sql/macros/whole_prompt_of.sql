-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); additive is whether the format reports
-- the uncached remainder beside the cache counts (pipelines/ingest/formats.yaml convention) or inside its prompt.
-- whole_prompt_of(additive, prompt, uncached, cache_read, w5, w1): the whole prompt, the sum of the classes for
-- additive formats, as reported otherwise.
create or replace macro whole_prompt_of(additive, prompt, uncached, cache_read, w5, w1) as
    case when additive then coalesce(uncached, prompt) + cache_read + w5 + w1 else prompt end;
