-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of anthropic_messages items (Anthropic Messages, also Message Batches results (input_tokens is the uncached remainder; 5m / 1h write split)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'anthropic' as inferred_provider,
    true as reports_write_split,
    ['$.usage']::varchar[] as usage_roots,
    [s.b -> '$.usage']::json[] as usage_objects,
    ['input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'cache_creation.ephemeral_5m_input_tokens', 'cache_creation.ephemeral_1h_input_tokens', 'output_tokens', 'output_tokens_details.thinking_tokens', 'service_tier', 'inference_geo', 'speed']::varchar[] as usage_known,
    v.usage.input_tokens as v_uncached,
    v.usage.cache_read_input_tokens as v_read,
    v.usage.cache_creation_input_tokens as v_write,
    v.usage.cache_creation.ephemeral_5m_input_tokens as v_write_5m,
    v.usage.cache_creation.ephemeral_1h_input_tokens as v_write_1h,
    v.usage.output_tokens as v_output,
    v.usage.output_tokens_details.thinking_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.usage.service_tier ->> '$' as body_tier,
    lower(v.usage.inference_geo ->> '$') as body_geo,
    lower(v.usage.speed ->> '$') as body_speed
from (select s.*, json_transform(s.b, '{"usage":{"input_tokens":"JSON","cache_read_input_tokens":"JSON","cache_creation_input_tokens":"JSON","cache_creation":{"ephemeral_5m_input_tokens":"JSON","ephemeral_1h_input_tokens":"JSON"},"output_tokens":"JSON","output_tokens_details":{"thinking_tokens":"JSON"},"service_tier":"JSON","inference_geo":"JSON","speed":"JSON"},"model":"JSON","id":"JSON"}') as v
      from shaped_items s where s.source_format = 'anthropic_messages') s;
