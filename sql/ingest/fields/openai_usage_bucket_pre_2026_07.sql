-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of openai_usage_bucket_pre_2026_07 items (OpenAI Usage API completions result before July 2026 (input_tokens was text input including cached; audio beside it)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v),
    'inclusive' as convention,
    'openai' as inferred_provider,
    'field' as request_count_from,
    true as id_from_content,
    'zero' as tier_prompt_from,
    v.input_tokens as v_prompt,
    v.input_audio_tokens as v_extra_prompt,
    v.input_cached_tokens as v_read,
    v.output_tokens as v_output,
    v.output_audio_tokens as v_output_extra,
    v.model ->> '$' as body_model,
    v.bucket_start_time as v_epoch,
    v.service_tier ->> '$' as body_tier,
    v.num_model_requests as v_request_count,
    (v.batch ->> '$') = 'true' as bucket_batch,
    v.project_id ->> '$' as body_tenant
from (select s.*, json_transform(s.b, '{"input_tokens":"JSON","input_audio_tokens":"JSON","input_cached_tokens":"JSON","output_tokens":"JSON","output_audio_tokens":"JSON","model":"JSON","bucket_start_time":"JSON","service_tier":"JSON","num_model_requests":"JSON","batch":"JSON","project_id":"JSON"}') as v
      from shaped_items s where s.source_format = 'openai_usage_bucket_pre_2026_07') s;
