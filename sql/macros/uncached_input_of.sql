-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); convention is the format's
-- (pipelines/lib/formats.yaml: inclusive, additive, trace; total_decides resolved to one of the first two).
-- uncached_input_of(convention, prompt, uncached, cache_read, w5, w1): tokens read neither from nor into the cache.
create or replace macro uncached_input_of(convention, prompt, uncached, cache_read, w5, w1) as
    case convention when 'additive' then coalesce(uncached, prompt) when 'inclusive' then prompt - cache_read - w5 - w1 end;
