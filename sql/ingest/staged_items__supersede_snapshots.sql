-- Streamed snapshots (general rows only: staged_general, staged_items__create.sql): a coding-agent transcript (formats
-- with the `snapshots` option in pipelines/ingest/formats.yaml: Claude Code, Codex CLI) writes several lines per
-- response while it streams, all carrying the response's id; the fullest one (most prompt + output tokens, then the
-- last line) is the bill. Every other accepted snapshot of the same (file, request id) is rejected here with a reason
-- that names the final line, so it is never priced, is listed in core.quarantine, and is counted in its file's
-- rows_quarantined and rows_superseded (files__insert_batch.sql): rows_in = accepted + quarantined holds. An earlier
-- snapshot is never kept beside the final one, and a later, fuller one is never dropped as a duplicate (ccusage#901,
-- #938: first-wins dedup under-counts output).
-- Regions between `-- <generated NAME>` and `-- </generated>` are written from pipelines/ingest/formats.yaml by
-- `python -m pipelines.ingest.format_sql` (drift-tested); the rest is hand-written.
update staged_general as s
set reason = 'superseded streaming snapshot of request ' || r.request_id || ': line ' || r.final_line
             || ' of this file is its final snapshot (the bill)'
from (
    select
        source_file, source_line, source_item, request_id,
        first_value(source_line) over fullest as final_line,
        row_number() over fullest as position
    from staged_general
    where reason is null and source_format in (
        -- <generated snapshot_formats: the formats with the snapshots option>
        'claude_code_transcript', 'codex_rollout'
        -- </generated>
    )
    window fullest as (partition by source_file, request_id
                       order by coalesce(prompt_tokens, 0) + coalesce(output_tokens, 0) desc, source_line desc, source_item desc)
) r
where r.position > 1
  and s.source_file = r.source_file and s.source_line = r.source_line and s.source_item = r.source_item;
