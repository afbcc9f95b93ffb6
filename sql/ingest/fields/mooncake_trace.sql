-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of mooncake_trace items (Mooncake block-hash trace (cache reads come from replaying hash_ids through a cache model)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'trace' as convention,
    'self_hosted' as inferred_provider,
    v.input_length as v_prompt,
    v.output_length as v_output,
    s.b -> '$.timestamp' as v_trace_ms,
    s.b -> '$.hash_ids' as hash_ids
from (select s.*, json_transform(s.b, '{"input_length":"JSON","output_length":"JSON"}') as v
      from shaped_items s where s.source_format = 'mooncake_trace') s;
