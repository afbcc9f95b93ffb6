-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); convention is the format's
-- (pipelines/lib/formats.yaml: inclusive, additive, trace; total_decides resolved to one of the first two).
-- output_of(output, output_extra, reasoning, reasoning_beside): output tokens; reasoning is inside the output
-- count except where the format says its provider reports it beside (xAI Chat Completions).
create or replace macro output_of(output, output_extra, reasoning, reasoning_beside) as
    coalesce(output, 0) + coalesce(output_extra, 0) + case when reasoning_beside then coalesce(reasoning, 0) else 0 end;
