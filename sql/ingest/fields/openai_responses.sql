-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of openai_responses items (OpenAI / Azure Responses).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'openai' as inferred_provider,
    ['$.usage']::varchar[] as usage_roots,
    [s.b -> '$.usage']::json[] as usage_objects,
    ['input_tokens', 'input_tokens_details.cached_tokens', 'input_tokens_details.cache_write_tokens', 'output_tokens', 'output_tokens_details.reasoning_tokens', 'cost', 'cost_in_usd_ticks', 'total_tokens']::varchar[] as usage_known,
    v.usage.input_tokens as v_prompt,
    v.usage.input_tokens_details.cached_tokens as v_read,
    v.usage.input_tokens_details.cache_write_tokens as v_write,
    v.usage.output_tokens as v_output,
    v.usage.output_tokens_details.reasoning_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.created_at as v_epoch,
    v.service_tier ->> '$' as body_tier,
    v.usage.cost as v_cost,
    v.usage.cost_in_usd_ticks as v_cost_ticks
from (select s.*, json_transform(s.b, '{"usage":{"input_tokens":"JSON","input_tokens_details":{"cached_tokens":"JSON","cache_write_tokens":"JSON"},"output_tokens":"JSON","output_tokens_details":{"reasoning_tokens":"JSON"},"cost":"JSON","cost_in_usd_ticks":"JSON"},"model":"JSON","id":"JSON","created_at":"JSON","service_tier":"JSON"}') as v
      from shaped_items s where s.source_format = 'openai_responses') s;
