-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;
-- edit the declaration and regenerate.
-- General normaliser, stage 2: the fields of codex_rollout items (Codex CLI session rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl): one item per token_count event, its turn's usage (last_token_usage, else the change of total_token_usage); a repeated event is a superseded snapshot).
-- One parse of each item for every path the format reads (into named struct fields).
insert into fielded_items by name
select
    s.* exclude (v, b),
    'inclusive' as convention,
    'openai' as inferred_provider,
    v.codex_token_count.turn.input_tokens as v_prompt,
    v.codex_token_count.turn.cached_input_tokens as v_read,
    v.codex_token_count.turn.output_tokens as v_output,
    v.codex_token_count.turn.reasoning_output_tokens as v_reasoning,
    v.codex_token_count.turn.total_tokens as v_total,
    v.codex_token_count.model ->> '$' as body_model,
    v.codex_token_count.id ->> '$' as body_id,
    v.timestamp ->> '$' as body_iso
from (select s.*, json_transform(s.b, '{"codex_token_count":{"turn":{"input_tokens":"JSON","cached_input_tokens":"JSON","output_tokens":"JSON","reasoning_output_tokens":"JSON","total_tokens":"JSON"},"model":"JSON","id":"JSON"},"timestamp":"JSON"}') as v
      from shaped_items s where s.source_format = 'codex_rollout') s;
