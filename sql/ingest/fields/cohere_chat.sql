-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of cohere_chat items (Cohere v2 chat (billed_units is what is billed; usage.cached_tokens carries no discount)).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'additive' as convention,
    'cohere' as inferred_provider,
    v.usage.billed_units.input_tokens as v_uncached,
    v.usage.billed_units.output_tokens as v_output,
    v.model ->> '$' as body_model,
    v.id ->> '$' as body_id
from (select s.*, json_transform(s.b, '{"usage":{"billed_units":{"input_tokens":"JSON","output_tokens":"JSON"}},"model":"JSON","id":"JSON"}') as v
      from shaped_items s where s.source_format = 'cohere_chat') s;
