-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of langfuse_generation items (Langfuse generation (usage_details keys add up to the prompt; input = uncached remainder; reasoning billed beside output)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'by_model' as inferred_provider,
    true as reports_write_split,
    ['$.u']::varchar[] as usage_roots,
    [s.b -> '$.u']::json[] as usage_objects,
    ['input', 'input_cached_tokens', 'input_cache_read', 'cache_read_input_tokens', 'input_cache_creation', 'cache_creation_input_tokens', 'cache_write_tokens', 'input_cache_write_tokens', 'input_cache_creation_5m', 'input_ephemeral_5m_input_tokens', 'input_cache_creation_1h', 'input_ephemeral_1h_input_tokens', 'output', 'output_reasoning_tokens', 'output_reasoning', 'reasoning_tokens', 'total']::varchar[] as usage_known,
    true as total_is_sum,
    true as zero_write_beside_split,
    v.u."input" as v_uncached,
    coalesce(v.u.input_cached_tokens, v.u.input_cache_read, v.u.cache_read_input_tokens) as v_read,
    coalesce(v.u.input_cache_creation, v.u.cache_creation_input_tokens, v.u.cache_write_tokens, v.u.input_cache_write_tokens) as v_write,
    coalesce(v.u.input_cache_creation_5m, v.u.input_ephemeral_5m_input_tokens) as v_write_5m,
    coalesce(v.u.input_cache_creation_1h, v.u.input_ephemeral_1h_input_tokens) as v_write_1h,
    v.u.output as v_output,
    coalesce(v.u.output_reasoning_tokens, v.u.output_reasoning, v.u.reasoning_tokens) as v_output_extra,
    coalesce(v.u.output_reasoning_tokens, v.u.output_reasoning, v.u.reasoning_tokens) as v_reasoning,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id,
    v.start ->> '$' as body_iso,
    v.u.total as v_total,
    coalesce(v.c.total, v.calculatedTotalCost, v.totalCost) as v_cost,
    v.start as v_start_at,
    v.completion_start as v_first_token_at,
    v."end" as v_end_at,
    v.latency as v_latency_s,
    v.time_to_first_token as v_ttft_s
from (select s.*, json_transform(s.b, '{"u":{"input":"JSON","input_cached_tokens":"JSON","input_cache_read":"JSON","cache_read_input_tokens":"JSON","input_cache_creation":"JSON","cache_creation_input_tokens":"JSON","cache_write_tokens":"JSON","input_cache_write_tokens":"JSON","input_cache_creation_5m":"JSON","input_ephemeral_5m_input_tokens":"JSON","input_cache_creation_1h":"JSON","input_ephemeral_1h_input_tokens":"JSON","output":"JSON","output_reasoning_tokens":"JSON","output_reasoning":"JSON","reasoning_tokens":"JSON","total":"JSON"},"model":"JSON","id":"JSON","start":"JSON","c":{"total":"JSON"},"calculatedTotalCost":"JSON","totalCost":"JSON","completion_start":"JSON","end":"JSON","latency":"JSON","time_to_first_token":"JSON"}') as v
      from shaped_items s where s.source_format = 'langfuse_generation') s;
