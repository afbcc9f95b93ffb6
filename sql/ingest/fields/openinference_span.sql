-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of openinference_span items (OpenInference span attributes (Arize Phoenix, via OTLP or as a plain object)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'total_decides' as convention,
    'by_model' as inferred_provider,
    ['$']::varchar[] as usage_roots,
    [s.b -> '$']::json[] as usage_objects,
    'llm.token_count.' as usage_prefix,
    ['"llm.token_count.prompt"', '"llm.token_count.prompt_details.cache_read"', '"llm.token_count.prompt_details.cache_write"', '"llm.token_count.completion"', '"llm.token_count.completion_details.reasoning"', '"llm.token_count.total"', '"llm.model_name"', '"llm.provider"', '"llm.system"']::varchar[] as usage_known,
    v."llm.token_count.prompt" as v_prompt,
    v."llm.token_count.prompt_details.cache_read" as v_read,
    v."llm.token_count.prompt_details.cache_write" as v_write,
    v."llm.token_count.completion" as v_output,
    v."llm.token_count.completion_details.reasoning" as v_reasoning,
    v."llm.token_count.total" as v_total,
    v."llm.model_name" ->> '$' as body_model,
    lower(coalesce(v."llm.provider", v."llm.system") ->> '$') as body_provider
from (select s.*, json_transform(s.b, '{"llm.token_count.prompt":"JSON","llm.token_count.prompt_details.cache_read":"JSON","llm.token_count.prompt_details.cache_write":"JSON","llm.token_count.completion":"JSON","llm.token_count.completion_details.reasoning":"JSON","llm.token_count.total":"JSON","llm.model_name":"JSON","llm.provider":"JSON","llm.system":"JSON"}') as v
      from shaped_items s where s.source_format = 'openinference_span') s;
