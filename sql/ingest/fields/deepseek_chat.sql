-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of deepseek_chat items (DeepSeek chat (prompt_tokens = hit + miss; the nested OpenAI-style field wins when a proxy adds it; no write fee)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'deepseek' as inferred_provider,
    ['$.usage']::varchar[] as usage_roots,
    [s.b -> '$.usage']::json[] as usage_objects,
    ['prompt_tokens', 'prompt_tokens_details.cached_tokens', 'prompt_cache_hit_tokens', 'prompt_cache_miss_tokens', 'completion_tokens', 'completion_tokens_details.reasoning_tokens', 'total_tokens']::varchar[] as usage_known,
    v.usage.prompt_tokens as v_prompt,
    coalesce(v.usage.prompt_tokens_details.cached_tokens, v.usage.prompt_cache_hit_tokens) as v_read,
    v.usage.prompt_cache_hit_tokens as v_hit,
    v.usage.prompt_cache_miss_tokens as v_miss,
    v.usage.completion_tokens as v_output,
    v.usage.completion_tokens_details.reasoning_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.created as v_epoch
from (select s.*, json_transform(s.b, '{"usage":{"prompt_tokens":"JSON","prompt_tokens_details":{"cached_tokens":"JSON"},"prompt_cache_hit_tokens":"JSON","prompt_cache_miss_tokens":"JSON","completion_tokens":"JSON","completion_tokens_details":{"reasoning_tokens":"JSON"}},"model":"JSON","id":"JSON","created":"JSON"}') as v
      from shaped_items s where s.source_format = 'deepseek_chat') s;
