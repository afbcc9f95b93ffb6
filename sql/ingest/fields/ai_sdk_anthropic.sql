-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of ai_sdk_anthropic items (Vercel AI SDK 4 result with @ai-sdk/anthropic (promptTokens is uncached only; cache counts in providerMetadata)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'anthropic' as inferred_provider,
    v.usage.promptTokens as v_uncached,
    v.providerMetadata.anthropic.cacheReadInputTokens as v_read,
    v.providerMetadata.anthropic.cacheCreationInputTokens as v_write,
    v.usage.completionTokens as v_output,
    v.model ->> '$' as body_model
from (select s.*, json_transform(s.b, '{"usage":{"promptTokens":"JSON","completionTokens":"JSON"},"providerMetadata":{"anthropic":{"cacheReadInputTokens":"JSON","cacheCreationInputTokens":"JSON"}},"model":"JSON"}') as v
      from shaped_items s where s.source_format = 'ai_sdk_anthropic') s;
