-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of ai_sdk items (Vercel AI SDK 4 result, other providers (OpenAI: inclusive, cachedPromptTokens inside)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'by_model' as inferred_provider,
    true as provider_from_package,
    v.usage.promptTokens as v_prompt,
    v.providerMetadata.openai.cachedPromptTokens as v_read,
    v.usage.completionTokens as v_output,
    v.model ->> '$' as body_model,
    v.provider ->> '$' as body_package
from (select s.*, json_transform(s.b, '{"usage":{"promptTokens":"JSON","completionTokens":"JSON"},"providerMetadata":{"openai":{"cachedPromptTokens":"JSON"}},"model":"JSON","provider":"JSON"}') as v
      from shaped_items s where s.source_format = 'ai_sdk') s;
