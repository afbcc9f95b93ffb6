-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of claude_code_transcript items (Claude Code session transcript (~/.claude/projects/<project>/<session>.jsonl): an assistant line's message is an Anthropic Message; streamed snapshots share its id, the fullest is the bill).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'anthropic' as inferred_provider,
    true as reports_write_split,
    v.message.usage.input_tokens as v_uncached,
    v.message.usage.cache_read_input_tokens as v_read,
    v.message.usage.cache_creation_input_tokens as v_write,
    v.message.usage.cache_creation.ephemeral_5m_input_tokens as v_write_5m,
    v.message.usage.cache_creation.ephemeral_1h_input_tokens as v_write_1h,
    v.message.usage.output_tokens as v_output,
    v.message.model ->> '$' as body_model,
    coalesce(v.message.id, v.requestId) ->> '$' as body_id,
    v.timestamp ->> '$' as body_iso,
    v.message.usage.service_tier ->> '$' as body_tier,
    lower(v.message.usage.inference_geo ->> '$') as body_geo,
    lower(v.message.usage.speed ->> '$') as body_speed,
    v.costUSD as v_cost
from (select s.*, json_transform(s.b, '{"message":{"usage":{"input_tokens":"JSON","cache_read_input_tokens":"JSON","cache_creation_input_tokens":"JSON","cache_creation":{"ephemeral_5m_input_tokens":"JSON","ephemeral_1h_input_tokens":"JSON"},"output_tokens":"JSON","service_tier":"JSON","inference_geo":"JSON","speed":"JSON"},"model":"JSON","id":"JSON"},"requestId":"JSON","timestamp":"JSON","costUSD":"JSON"}') as v
      from shaped_items s where s.source_format = 'claude_code_transcript') s;
