-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of openai_usage_bucket items (OpenAI organisation Usage API completions result, after the July 2026 change (input_tokens = uncached + cached + cache write)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v),
    'additive' as convention,
    'openai' as inferred_provider,
    'field' as request_count_from,
    true as id_from_content,
    'zero' as tier_prompt_from,
    v.input_tokens as v_prompt,
    v.input_uncached_tokens as v_uncached,
    v.input_cached_tokens as v_read,
    v.input_cache_write_tokens as v_write,
    v.output_tokens as v_output,
    v.model ->> '$' as body_model,
    v.bucket_start_time as v_epoch,
    v.service_tier ->> '$' as body_tier,
    v.num_model_requests as v_request_count,
    (v.batch ->> '$') = 'true' as bucket_batch,
    v.project_id ->> '$' as body_tenant
from (select s.*, json_transform(s.b, '{"input_tokens":"JSON","input_uncached_tokens":"JSON","input_cached_tokens":"JSON","input_cache_write_tokens":"JSON","output_tokens":"JSON","model":"JSON","bucket_start_time":"JSON","service_tier":"JSON","num_model_requests":"JSON","batch":"JSON","project_id":"JSON"}') as v
      from shaped_items s where s.source_format = 'openai_usage_bucket') s;
