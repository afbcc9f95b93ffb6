-- General normaliser, between stages 3 and 4: unmapped_usage, one row per item of validated_items that carries
-- a number under its format's usage roots (pipelines/ingest/formats.yaml usage_keys) which the format neither maps
-- to a field nor declares informational, and that is above zero. unmapped_usage is a JSON object: body path ->
-- the number (tokens, as the source reports them), e.g. {"usage.prompt_tokens_details.audio_tokens": 12}; stage 4
-- copies it to core.usage.unmapped_usage and names the keys in core.usage.usage_issue, and the data_quality rule
-- reports each (day, format, key) with its tokens. Set-wise: one json_tree walk of each usage object; a flat
-- attribute map (span attributes) counts only the keys starting with its usage_prefix. An element of a per-modality
-- breakdown ({modality, tokenCount}) whose modality the format prices apart (unpriced_modalities: Gemini AUDIO) is
-- unmapped under its modality's name, e.g. {"usageMetadata.promptTokensDetails[AUDIO].tokenCount": 120}.
create or replace temp table unmapped_usage as
with
roots as (
    -- each root beside its usage object (stage 2 took them from the body, in the same order)
    select v.source_line, v.source_item, v.usage_prefix, v.usage_known, v.unpriced_modalities,
           unnest(v.usage_roots) as root, unnest(v.usage_objects) as usage_object
    from validated_items v
    where v.field_error is null and v.usage_roots is not null
),
leaves as (
    select
        o.*,
        t.key,
        t.value,
        -- the leaf's path in its root; a breakdown element of a modality priced apart is named by its modality
        case when o.unpriced_modalities is null or t.key <> 'tokenCount' then substr(t.fullkey, 3)
             when list_contains(o.unpriced_modalities, json_extract_string(o.usage_object, t.path || '.modality'))
             then regexp_replace(substr(t.fullkey, 3), '\[[0-9]+\]\.tokenCount$',
                                 '[' || json_extract_string(o.usage_object, t.path || '.modality') || '].tokenCount')
             else substr(t.fullkey, 3) end as leaf_path
    from roots o, json_tree(o.usage_object) t
    where t.type in ('UBIGINT', 'BIGINT', 'HUGEINT', 'DOUBLE')
      and (o.usage_prefix is null or (t.path = '$' and starts_with(t.key, o.usage_prefix)))
),
numbers as (
    select
        o.source_line,
        o.source_item,
        -- the key relative to its root, array indexes as [*], a key of a flat attribute map quoted (how
        -- formats.yaml writes them; json_tree's fullkey does not quote a key holding a dot)
        case when o.usage_prefix is not null then '"' || o.key || '"'
             else regexp_replace(o.leaf_path, '\[[0-9]+\]', '[*]', 'g') end as relative_key,
        case when o.usage_prefix is not null then o.key
             else case when o.root = '$' then '' else substr(o.root, 3) || '.' end
                  || regexp_replace(o.leaf_path, '\[[0-9]+\]', '[*]', 'g') end as body_key,
        o.usage_known,
        o.value
    from leaves o
)
select
    source_line,
    source_item,
    json_group_object(body_key, value) as unmapped_usage,
    sum(try_cast(value::varchar as double)) as unmapped_tokens  -- their sum (a total that leaves them out is explained)
from numbers
where not list_contains(usage_known, relative_key) and try_cast(value::varchar as double) > 0
group by source_line, source_item;
