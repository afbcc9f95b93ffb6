-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of langchain_usage_metadata items (LangChain AIMessage.usage_metadata (input_tokens includes input_token_details)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'by_model' as inferred_provider,
    true as reports_write_split,
    ['$.usage_metadata']::varchar[] as usage_roots,
    [s.b -> '$.usage_metadata']::json[] as usage_objects,
    ['input_tokens', 'input_token_details.cache_read', 'input_token_details.cache_creation', 'input_token_details.ephemeral_5m_input_tokens', 'input_token_details.ephemeral_1h_input_tokens', 'output_tokens', 'output_token_details.reasoning', 'total_tokens']::varchar[] as usage_known,
    true as zero_write_beside_split,
    v.usage_metadata.input_tokens as v_prompt,
    v.usage_metadata.input_token_details.cache_read as v_read,
    v.usage_metadata.input_token_details.cache_creation as v_write,
    v.usage_metadata.input_token_details.ephemeral_5m_input_tokens as v_write_5m,
    v.usage_metadata.input_token_details.ephemeral_1h_input_tokens as v_write_1h,
    v.usage_metadata.output_tokens as v_output,
    v.usage_metadata.output_token_details.reasoning as v_reasoning,
    coalesce(v.model, v.response_metadata.model_name) ->> '$' as body_model,
    lower(v.model_provider ->> '$') as body_provider
from (select s.*, json_transform(s.b, '{"usage_metadata":{"input_tokens":"JSON","input_token_details":{"cache_read":"JSON","cache_creation":"JSON","ephemeral_5m_input_tokens":"JSON","ephemeral_1h_input_tokens":"JSON"},"output_tokens":"JSON","output_token_details":{"reasoning":"JSON"}},"model":"JSON","response_metadata":{"model_name":"JSON"},"model_provider":"JSON"}') as v
      from shaped_items s where s.source_format = 'langchain_usage_metadata') s;
