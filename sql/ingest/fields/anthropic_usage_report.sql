-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of anthropic_usage_report items (Anthropic Admin usage report result (no flat cache_creation_input_tokens; no request count)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v),
    'additive' as convention,
    'anthropic' as inferred_provider,
    true as reports_write_split,
    'unknown' as request_count_from,
    true as id_from_content,
    'context_window' as tier_prompt_from,
    v.uncached_input_tokens as v_uncached,
    v.cache_read_input_tokens as v_read,
    v.cache_creation_input_tokens as v_write,
    v.cache_creation.ephemeral_5m_input_tokens as v_write_5m,
    v.cache_creation.ephemeral_1h_input_tokens as v_write_1h,
    v.output_tokens as v_output,
    v.model ->> '$' as body_model,
    v.starting_at ->> '$' as body_iso,
    v.service_tier ->> '$' as body_tier,
    v.context_window ->> '$' as context_window,
    lower(v.inference_geo ->> '$') as body_geo,
    lower(v.speed ->> '$') as body_speed
from (select s.*, json_transform(s.b, '{"uncached_input_tokens":"JSON","cache_read_input_tokens":"JSON","cache_creation_input_tokens":"JSON","cache_creation":{"ephemeral_5m_input_tokens":"JSON","ephemeral_1h_input_tokens":"JSON"},"output_tokens":"JSON","model":"JSON","starting_at":"JSON","service_tier":"JSON","context_window":"JSON","inference_geo":"JSON","speed":"JSON"}') as v
      from shaped_items s where s.source_format = 'anthropic_usage_report') s;
