-- Keep the rows of a file's previous generation as history (registered table batch_predecessors,
-- action 'retire': the file shrank or was replaced and its old content is nowhere in the folder): they
-- move to its history name (old_file + '#n'), with ids minted from the file name minted again from it,
-- as a build of that content under that name would give them.
update stage.duplicate_rows as u
set source_file = p.history_file,
    request_id = case
        when u.request_id = line_request_id(p.old_file, u.source_line, u.source_item)
            then line_request_id(p.history_file, u.source_line, u.source_item)
        when starts_with(u.request_id, 'batch:' || p.old_file || ':')
            then 'batch:' || p.history_file || ':' || substr(u.request_id, length('batch:' || p.old_file || ':') + 1)
        else u.request_id
    end
from batch_predecessors p
where p.action = 'retire' and u.source_file = p.old_file;
