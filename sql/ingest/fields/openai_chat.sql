-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of openai_chat items (OpenAI Chat Completions; also Azure, xAI, Mistral, OpenRouter, vLLM, SGLang).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'by_model' as inferred_provider,
    'openai' as default_provider,
    coalesce(json_type(v.provider) = 'VARCHAR', false) as body_names_upstream,
    ['xai']::varchar[] as reasoning_beside_output,
    v.usage.prompt_tokens as v_prompt,
    coalesce(v.usage.prompt_tokens_details.cached_tokens, v.usage.cache_read_input_tokens) as v_read,
    coalesce(v.usage.prompt_tokens_details.cache_write_tokens, v.usage.cache_creation_input_tokens, v.usage.prompt_tokens_details.cache_creation_tokens) as v_write,
    v.usage.completion_tokens as v_output,
    v.usage.completion_tokens_details.reasoning_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.created as v_epoch,
    v.service_tier ->> '$' as body_tier,
    v.usage.cost as v_cost,
    v.usage.cost_details.upstream_inference_cost as v_cost_upstream,
    (v.usage.is_byok ->> '$') = 'true' as is_byok
from (select s.*, json_transform(s.b, '{"usage":{"prompt_tokens":"JSON","prompt_tokens_details":{"cached_tokens":"JSON","cache_write_tokens":"JSON","cache_creation_tokens":"JSON"},"cache_read_input_tokens":"JSON","cache_creation_input_tokens":"JSON","completion_tokens":"JSON","completion_tokens_details":{"reasoning_tokens":"JSON"},"cost":"JSON","cost_details":{"upstream_inference_cost":"JSON"},"is_byok":"JSON"},"model":"JSON","id":"JSON","created":"JSON","service_tier":"JSON","provider":"JSON"}') as v
      from shaped_items s where s.source_format = 'openai_chat') s;
