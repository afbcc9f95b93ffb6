-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of canonical items (canonical core.usage columns (CSV, Parquet or JSON rows)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'by_model' as inferred_provider,
    true as reports_write_split,
    'field_or_one' as request_count_from,
    v.uncached_input_tokens as v_uncached,
    v.cache_read_tokens as v_read,
    v.cache_write_5m_tokens as v_write_5m,
    v.cache_write_1h_tokens as v_write_1h,
    v.prompt_tokens as v_prompt,
    v.output_tokens as v_output,
    v.reasoning_tokens as v_reasoning,
    v.model ->> '$' as body_model,
    v.request_id ->> '$' as body_id,
    v.ts ->> '$' as body_iso,
    v.service_tier ->> '$' as body_tier,
    lower(v.provider ->> '$') as body_provider,
    v.tenant ->> '$' as body_tenant,
    v.app ->> '$' as body_app,
    v.request_count as v_request_count,
    v.reported_cost_usd as v_cost,
    v.latency_ms as v_latency_ms,
    v.ttft_ms as v_ttft_ms
from (select s.*, json_transform(s.b, '{"uncached_input_tokens":"JSON","cache_read_tokens":"JSON","cache_write_5m_tokens":"JSON","cache_write_1h_tokens":"JSON","prompt_tokens":"JSON","output_tokens":"JSON","reasoning_tokens":"JSON","model":"JSON","request_id":"JSON","ts":"JSON","service_tier":"JSON","provider":"JSON","tenant":"JSON","app":"JSON","request_count":"JSON","reported_cost_usd":"JSON","latency_ms":"JSON","ttft_ms":"JSON"}') as v
      from shaped_items s where s.source_format = 'canonical') s;
