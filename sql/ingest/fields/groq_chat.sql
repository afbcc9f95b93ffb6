-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of groq_chat items (Groq chat completions (OpenAI-compatible; prompt_tokens includes the cached prefix; no write fee)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'groq' as inferred_provider,
    ['$.usage']::varchar[] as usage_roots,
    [s.b -> '$.usage']::json[] as usage_objects,
    ['prompt_tokens', 'prompt_tokens_details.cached_tokens', 'completion_tokens', 'total_tokens', 'queue_time', 'prompt_time', 'completion_time', 'total_time']::varchar[] as usage_known,
    v.usage.prompt_tokens as v_prompt,
    v.usage.prompt_tokens_details.cached_tokens as v_read,
    v.usage.completion_tokens as v_output,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.created as v_epoch
from (select s.*, json_transform(s.b, '{"usage":{"prompt_tokens":"JSON","prompt_tokens_details":{"cached_tokens":"JSON"},"completion_tokens":"JSON"},"model":"JSON","id":"JSON","created":"JSON"}') as v
      from shaped_items s where s.source_format = 'groq_chat') s;
