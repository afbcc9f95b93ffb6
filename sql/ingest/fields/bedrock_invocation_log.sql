-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of bedrock_invocation_log items (Bedrock model-invocation log record (CloudWatch Logs / S3)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'bedrock' as inferred_provider,
    v."input".inputTokenCount as v_uncached,
    v."input".cacheReadInputTokenCount as v_read,
    v."input".cacheWriteInputTokenCount as v_write,
    v.output.outputTokenCount as v_output,
    v.modelId ->> '$' as body_model,
    v.requestId ->> '$' as body_id,
    v.timestamp ->> '$' as body_iso,
    v.output.outputBodyJson.metrics.latencyMs as v_latency_ms
from (select s.*, json_transform(s.b, '{"input":{"inputTokenCount":"JSON","cacheReadInputTokenCount":"JSON","cacheWriteInputTokenCount":"JSON"},"output":{"outputTokenCount":"JSON","outputBodyJson":{"metrics":{"latencyMs":"JSON"}}},"modelId":"JSON","requestId":"JSON","timestamp":"JSON"}') as v
      from shaped_items s where s.source_format = 'bedrock_invocation_log') s;
