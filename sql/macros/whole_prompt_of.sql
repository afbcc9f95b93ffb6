-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); convention is the format's
-- (pipelines/lib/formats.yaml: inclusive, additive, trace; total_decides resolved to one of the first two).
-- whole_prompt_of(convention, prompt, uncached, cache_read, w5, w1): the whole prompt, the sum of the classes
-- for additive formats, as reported otherwise.
create or replace macro whole_prompt_of(convention, prompt, uncached, cache_read, w5, w1) as
    case when convention = 'additive' then coalesce(uncached, prompt) + cache_read + w5 + w1 else prompt end;
