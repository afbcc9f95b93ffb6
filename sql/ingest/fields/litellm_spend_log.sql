-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of litellm_spend_log items (LiteLLM spend-log row (metadata.usage_object is the cache-inclusive Usage; spend is billed USD; cache_hit is LiteLLM's response cache)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'by_model' as inferred_provider,
    true as reports_write_split,
    ['$.metadata.usage_object']::varchar[] as usage_roots,
    [s.b -> '$.metadata.usage_object']::json[] as usage_objects,
    ['prompt_tokens', 'prompt_tokens_details.cached_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'prompt_tokens_details.cache_creation_tokens', 'prompt_tokens_details.cache_creation_token_details.ephemeral_5m_input_tokens', 'prompt_tokens_details.cache_creation_token_details.ephemeral_1h_input_tokens', 'completion_tokens', 'completion_tokens_details.reasoning_tokens', 'total_tokens', 'prompt_tokens_details.text_tokens', 'prompt_tokens_details.cache_write_tokens', 'completion_tokens_details.text_tokens', 'completion_tokens_details.accepted_prediction_tokens', 'completion_tokens_details.rejected_prediction_tokens']::varchar[] as usage_known,
    true as provider_from_model_prefix,
    coalesce(v.metadata.usage_object.prompt_tokens, v.prompt_tokens) as v_prompt,
    coalesce(v.metadata.usage_object.prompt_tokens_details.cached_tokens, v.metadata.usage_object.cache_read_input_tokens) as v_read,
    coalesce(v.metadata.usage_object.cache_creation_input_tokens, v.metadata.usage_object.prompt_tokens_details.cache_creation_tokens) as v_write,
    v.metadata.usage_object.prompt_tokens_details.cache_creation_token_details.ephemeral_5m_input_tokens as v_write_5m,
    v.metadata.usage_object.prompt_tokens_details.cache_creation_token_details.ephemeral_1h_input_tokens as v_write_1h,
    coalesce(v.metadata.usage_object.completion_tokens, v.completion_tokens) as v_output,
    v.metadata.usage_object.completion_tokens_details.reasoning_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    coalesce(v.request_id, v.id) ->> '$' as body_id,
    v.startTime ->> '$' as body_iso,
    v.startTime as v_epoch,
    coalesce(v.spend, v.response_cost) as v_cost,
    lower(v.custom_llm_provider ->> '$') as body_provider,
    v.team_id ->> '$' as body_tenant,
    lower(v.cache_hit ->> '$') in ('true', '1', 'yes') as gateway_cache_hit,
    lower(v.status ->> '$') as row_status,
    v.startTime as v_start_at,
    v.completionStartTime as v_first_token_at,
    v.endTime as v_end_at,
    v.request_duration_ms as v_latency_ms
from (select s.*, json_transform(s.b, '{"metadata":{"usage_object":{"prompt_tokens":"JSON","prompt_tokens_details":{"cached_tokens":"JSON","cache_creation_tokens":"JSON","cache_creation_token_details":{"ephemeral_5m_input_tokens":"JSON","ephemeral_1h_input_tokens":"JSON"}},"cache_read_input_tokens":"JSON","cache_creation_input_tokens":"JSON","completion_tokens":"JSON","completion_tokens_details":{"reasoning_tokens":"JSON"}}},"prompt_tokens":"JSON","completion_tokens":"JSON","model":"JSON","request_id":"JSON","id":"JSON","startTime":"JSON","spend":"JSON","response_cost":"JSON","custom_llm_provider":"JSON","team_id":"JSON","cache_hit":"JSON","status":"JSON","completionStartTime":"JSON","endTime":"JSON","request_duration_ms":"JSON"}') as v
      from shaped_items s where s.source_format = 'litellm_spend_log') s;
