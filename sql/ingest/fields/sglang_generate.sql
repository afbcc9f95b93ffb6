-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of sglang_generate items (SGLang native /generate (meta_info.cached_tokens is part of prompt_tokens)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'self_hosted' as inferred_provider,
    v.meta_info.prompt_tokens as v_prompt,
    v.meta_info.cached_tokens as v_read,
    v.meta_info.completion_tokens as v_output,
    v.meta_info.reasoning_tokens as v_reasoning,
    v.meta_info.id ->> '$' as body_id,
    v.meta_info.response_sent_to_client_ts as v_epoch,
    v.meta_info.e2e_latency as v_latency_s
from (select s.*, json_transform(s.b, '{"meta_info":{"prompt_tokens":"JSON","cached_tokens":"JSON","completion_tokens":"JSON","reasoning_tokens":"JSON","id":"JSON","response_sent_to_client_ts":"JSON","e2e_latency":"JSON"}}') as v
      from shaped_items s where s.source_format = 'sglang_generate') s;
