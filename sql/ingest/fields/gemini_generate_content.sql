-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of gemini_generate_content items (Gemini / Vertex generateContent (thoughts are output beside candidates; toolUsePromptTokenCount is extra input)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'gemini' as inferred_provider,
    ['$.usageMetadata']::varchar[] as usage_roots,
    [s.b -> '$.usageMetadata']::json[] as usage_objects,
    ['promptTokenCount', 'toolUsePromptTokenCount', 'cachedContentTokenCount', 'candidatesTokenCount', 'thoughtsTokenCount', 'serviceTier', 'totalTokenCount', 'promptTokensDetails[*].tokenCount', 'cacheTokensDetails[*].tokenCount', 'candidatesTokensDetails[*].tokenCount', 'toolUsePromptTokensDetails[*].tokenCount', 'promptTokensDetails[*].modality', 'cacheTokensDetails[*].modality', 'candidatesTokensDetails[*].modality', 'toolUsePromptTokensDetails[*].modality']::varchar[] as usage_known,
    true as output_optional,
    true as reasoning_may_exceed_output,
    ['AUDIO']::varchar[] as unpriced_modalities,
    v.usageMetadata.promptTokenCount as v_prompt,
    v.usageMetadata.toolUsePromptTokenCount as v_extra_prompt,
    v.usageMetadata.cachedContentTokenCount as v_read,
    v.usageMetadata.candidatesTokenCount as v_output,
    v.usageMetadata.thoughtsTokenCount as v_output_extra,
    v.usageMetadata.thoughtsTokenCount as v_reasoning,
    coalesce(v.modelVersion, v.model) ->> '$' as body_model,
    v.responseId ->> '$' as body_id,
    v.createTime ->> '$' as body_iso,
    v.usageMetadata.serviceTier ->> '$' as body_tier
from (select s.*, json_transform(s.b, '{"usageMetadata":{"promptTokenCount":"JSON","toolUsePromptTokenCount":"JSON","cachedContentTokenCount":"JSON","candidatesTokenCount":"JSON","thoughtsTokenCount":"JSON","serviceTier":"JSON"},"modelVersion":"JSON","model":"JSON","responseId":"JSON","createTime":"JSON"}') as v
      from shaped_items s where s.source_format = 'gemini_generate_content') s;
