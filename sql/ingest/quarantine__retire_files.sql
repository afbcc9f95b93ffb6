-- Keep the core.quarantine rows of a file's previous generation under its history name (registered table
-- batch_predecessors, action 'retire'; see usage__retire_files.sql). A duplicate's duplicate_request_id moves with
-- the id it repeats (request_id_in_history.sql), as usage__retire_files.sql and duplicate_rows__retire_files.sql
-- rewrite that id in core.usage and stage.duplicate_rows. Left under the old id, the row was deleted as a touched
-- id's duplicate when the file was replaced and never written again (rows_in = accepted + quarantined then failed).
update core.quarantine as q
set source_file = p.history_file,
    duplicate_request_id = request_id_in_history(q.duplicate_request_id, p.old_file, p.history_file, q.source_line,
                                                 coalesce(q.source_item, 0))
from batch_predecessors p
where p.action = 'retire' and q.source_file = p.old_file;
