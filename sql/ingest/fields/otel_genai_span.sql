-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of otel_genai_span items (OpenTelemetry GenAI span attributes (input counts include cache reads and writes; older spellings accepted as Sentry/Relay do)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'by_model' as inferred_provider,
    ['$']::varchar[] as usage_roots,
    [s.b -> '$']::json[] as usage_objects,
    'gen_ai.usage.' as usage_prefix,
    ['"gen_ai.usage.input_tokens"', '"gen_ai.usage.prompt_tokens"', '"gen_ai.usage.cache_read.input_tokens"', '"gen_ai.usage.cache_read_input_tokens"', '"gen_ai.usage.input_tokens.cached"', '"gen_ai.usage.cache_write.input_tokens"', '"gen_ai.usage.cache_creation.input_tokens"', '"gen_ai.usage.cache_creation_input_tokens"', '"gen_ai.usage.input_tokens.cache_write"', '"gen_ai.usage.output_tokens"', '"gen_ai.usage.completion_tokens"', '"gen_ai.usage.reasoning.output_tokens"', '"gen_ai.usage.output_tokens.reasoning"', '"gen_ai.response.model"', '"gen_ai.request.model"', '"gen_ai.response.id"', '"gen_ai.provider.name"', '"gen_ai.system"', '"openai.response.service_tier"', '"gen_ai.response.time_to_first_chunk"', '"gen_ai.response.time_to_first_token"', '"gen_ai.usage.total_tokens"']::varchar[] as usage_known,
    coalesce(v."gen_ai.usage.input_tokens", v."gen_ai.usage.prompt_tokens") as v_prompt,
    coalesce(v."gen_ai.usage.cache_read.input_tokens", v."gen_ai.usage.cache_read_input_tokens", v."gen_ai.usage.input_tokens.cached") as v_read,
    coalesce(v."gen_ai.usage.cache_write.input_tokens", v."gen_ai.usage.cache_creation.input_tokens", v."gen_ai.usage.cache_creation_input_tokens", v."gen_ai.usage.input_tokens.cache_write") as v_write,
    coalesce(v."gen_ai.usage.output_tokens", v."gen_ai.usage.completion_tokens") as v_output,
    coalesce(v."gen_ai.usage.reasoning.output_tokens", v."gen_ai.usage.output_tokens.reasoning") as v_reasoning,
    coalesce(v."gen_ai.response.model", v."gen_ai.request.model") ->> '$' as body_model,
    v."gen_ai.response.id" ->> '$' as body_id,
    lower(coalesce(v."gen_ai.provider.name", v."gen_ai.system") ->> '$') as body_provider,
    v."openai.response.service_tier" ->> '$' as body_tier,
    coalesce(v."gen_ai.response.time_to_first_chunk", v."gen_ai.response.time_to_first_token") as v_ttft_s
from (select s.*, json_transform(s.b, '{"gen_ai.usage.input_tokens":"JSON","gen_ai.usage.prompt_tokens":"JSON","gen_ai.usage.cache_read.input_tokens":"JSON","gen_ai.usage.cache_read_input_tokens":"JSON","gen_ai.usage.input_tokens.cached":"JSON","gen_ai.usage.cache_write.input_tokens":"JSON","gen_ai.usage.cache_creation.input_tokens":"JSON","gen_ai.usage.cache_creation_input_tokens":"JSON","gen_ai.usage.input_tokens.cache_write":"JSON","gen_ai.usage.output_tokens":"JSON","gen_ai.usage.completion_tokens":"JSON","gen_ai.usage.reasoning.output_tokens":"JSON","gen_ai.usage.output_tokens.reasoning":"JSON","gen_ai.response.model":"JSON","gen_ai.request.model":"JSON","gen_ai.response.id":"JSON","gen_ai.provider.name":"JSON","gen_ai.system":"JSON","openai.response.service_tier":"JSON","gen_ai.response.time_to_first_chunk":"JSON","gen_ai.response.time_to_first_token":"JSON"}') as v
      from shaped_items s where s.source_format = 'otel_genai_span') s;
