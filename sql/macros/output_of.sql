-- Token classes, written once for both readers (file_rows__insert_normalised.sql and the fast lane's
-- fast_items__read_jsonl.sql): counts are BIGINT (null = not reported); additive is whether the format reports
-- the uncached remainder beside the cache counts (pipelines/ingest/formats.yaml convention) or inside its prompt.
-- output_of(output, output_extra, reasoning, reasoning_beside): output tokens; reasoning is inside the output
-- count except where the format says its provider reports it beside (xAI Chat Completions).
create or replace macro output_of(output, output_extra, reasoning, reasoning_beside) as
    coalesce(output, 0) + coalesce(output_extra, 0) + case when reasoning_beside then coalesce(reasoning, 0) else 0 end;

-- thinking_gap(total, prompt, output, applies): the tokens a reported total counts beyond prompt and output, for a
-- provider whose output count leaves its thinking out (formats.yaml option thinking_only_in_total: Gemini through
-- the OpenAI-compatibility endpoint, providers.md 4.1); 0 otherwise, and when the total is not above the two
create or replace macro thinking_gap(total, prompt, output, applies) as
    case when applies and total > coalesce(prompt, 0) + coalesce(output, 0) then total - coalesce(prompt, 0) - coalesce(output, 0)
         else 0 end;
