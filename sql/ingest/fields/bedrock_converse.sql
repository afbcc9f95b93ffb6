-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of bedrock_converse items (Bedrock Converse (inputTokens excludes cache reads and writes; the body names no model)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'bedrock' as inferred_provider,
    ['$.usage']::varchar[] as usage_roots,
    [s.b -> '$.usage']::json[] as usage_objects,
    ['inputTokens', 'cacheReadInputTokens', 'cacheWriteInputTokens', 'cacheDetails', 'cacheDetails[*].inputTokens', 'outputTokens', 'totalTokens', 'cacheReadInputTokenCount', 'cacheWriteInputTokenCount']::varchar[] as usage_known,
    v.usage.inputTokens as v_uncached,
    v.usage.cacheReadInputTokens as v_read,
    v.usage.cacheWriteInputTokens as v_write,
    v.usage.cacheDetails as v_write_by_ttl,
    v.usage.outputTokens as v_output,
    v.metrics.latencyMs as v_latency_ms
from (select s.*, json_transform(s.b, '{"usage":{"inputTokens":"JSON","cacheReadInputTokens":"JSON","cacheWriteInputTokens":"JSON","cacheDetails":"JSON","outputTokens":"JSON"},"metrics":{"latencyMs":"JSON"}}') as v
      from shaped_items s where s.source_format = 'bedrock_converse') s;
