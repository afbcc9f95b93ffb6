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
    ['$.usage']::varchar[] as usage_roots,
    [s.b -> '$.usage']::json[] as usage_objects,
    ['prompt_tokens', 'total_tokens', 'prompt_tokens_details.cached_tokens', 'cache_read_input_tokens', 'cached_tokens', 'prompt_tokens_details.cache_write_tokens', 'cache_creation_input_tokens', 'prompt_tokens_details.cache_creation_tokens', 'prompt_tokens_details.cache_creation_input_tokens', 'prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens', 'completion_tokens', 'completion_tokens_details.reasoning_tokens', 'cost.total_cost', 'cost', 'cost_details.upstream_inference_cost', 'is_byok', 'cost_in_usd_ticks', 'prompt_tokens_details.text_tokens', 'completion_tokens_details.text_tokens', 'completion_tokens_details.accepted_prediction_tokens', 'completion_tokens_details.rejected_prediction_tokens', 'cost_details.upstream_inference_prompt_cost', 'cost_details.upstream_inference_completions_cost', 'cost.input_tokens_cost', 'cost.output_tokens_cost', 'cost.reasoning_tokens_cost', 'cost.request_cost', 'cost.citation_tokens_cost', 'cost.search_queries_cost']::varchar[] as usage_known,
    ['xai']::varchar[] as reasoning_beside_output,
    ['gemini']::varchar[] as thinking_only_in_total,
    v.usage.prompt_tokens as v_prompt,
    v.usage.total_tokens as v_total,
    coalesce(v.usage.prompt_tokens_details.cached_tokens, v.usage.cache_read_input_tokens, v.usage.cached_tokens) as v_read,
    coalesce(v.usage.prompt_tokens_details.cache_write_tokens, v.usage.cache_creation_input_tokens, v.usage.prompt_tokens_details.cache_creation_tokens, v.usage.prompt_tokens_details.cache_creation_input_tokens) as v_write,
    v.usage.prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens as v_write_5m,
    v.usage.completion_tokens as v_output,
    v.usage.completion_tokens_details.reasoning_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.created as v_epoch,
    v.service_tier ->> '$' as body_tier,
    coalesce(json_present(v.usage.cost -> '$.total_cost'), v.usage.cost) as v_cost,
    v.usage.cost_details.upstream_inference_cost as v_cost_upstream,
    (v.usage.is_byok ->> '$') = 'true' as is_byok,
    v.usage.cost_in_usd_ticks as v_cost_ticks
from (select s.*, json_transform(s.b, '{"usage":{"prompt_tokens":"JSON","total_tokens":"JSON","prompt_tokens_details":{"cached_tokens":"JSON","cache_write_tokens":"JSON","cache_creation_tokens":"JSON","cache_creation_input_tokens":"JSON","cache_creation":{"ephemeral_5m_input_tokens":"JSON"}},"cache_read_input_tokens":"JSON","cached_tokens":"JSON","cache_creation_input_tokens":"JSON","completion_tokens":"JSON","completion_tokens_details":{"reasoning_tokens":"JSON"},"cost":"JSON","cost_details":{"upstream_inference_cost":"JSON"},"is_byok":"JSON","cost_in_usd_ticks":"JSON"},"model":"JSON","id":"JSON","created":"JSON","service_tier":"JSON","provider":"JSON"}') as v
      from shaped_items s where s.source_format = 'openai_chat') s;
