-- Keep the rows of a file's previous generation as history (registered table batch_predecessors,
-- action 'retire': the file shrank or was replaced and its old content is nowhere in the folder): they
-- move to its history name (old_file + '#n'), with ids minted from the file name minted again from it
-- (request_id_in_history.sql).
update stage.duplicate_rows as u
set source_file = p.history_file,
    request_id = request_id_in_history(u.request_id, p.old_file, p.history_file, u.source_line, u.source_item)
from batch_predecessors p
where p.action = 'retire' and u.source_file = p.old_file;
