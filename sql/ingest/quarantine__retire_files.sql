-- Keep the core.quarantine rows of a file's previous generation under its history name (registered table
-- batch_predecessors, action 'retire'; see usage__retire_files.sql). A duplicate's duplicate_request_id moves with
-- the id it repeats: an id minted from the file name (its line's, or a batch result's file-scoped custom_id) is
-- minted again from the history name, as usage__retire_files.sql and duplicate_rows__retire_files.sql rewrite that
-- id in core.usage and stage.duplicate_rows. Left under the old id, the row was deleted as a touched id's duplicate
-- when the file was replaced and never written again (rows_in = accepted + quarantined failed from then on).
update core.quarantine as q
set source_file = p.history_file,
    duplicate_request_id = case
        when q.duplicate_request_id = line_request_id(p.old_file, q.source_line, coalesce(q.source_item, 0))
            then line_request_id(p.history_file, q.source_line, coalesce(q.source_item, 0))
        when starts_with(q.duplicate_request_id, 'batch:' || p.old_file || ':')
            then 'batch:' || p.history_file || ':'
                 || substr(q.duplicate_request_id, length('batch:' || p.old_file || ':') + 1)
        else q.duplicate_request_id
    end
from batch_predecessors p
where p.action = 'retire' and q.source_file = p.old_file;
