-- request_id_in_history(request_id, old_file, history_file, source_line, source_item): the id of a row of a file's
-- previous generation once it moves to the file's history name (old_file + '#n'): an id minted from the file name
-- (line_request_id, or a batch result's 'batch:<file>:<custom_id>', request_id_staged.sql) is minted again from the
-- history name, as a build of that content under that name would give it; any other id is kept. Used by the
-- *__retire_files.sql statements of core.usage, stage.duplicate_rows and core.quarantine (its duplicate_request_id).
create or replace macro request_id_in_history(request_id, old_file, history_file, source_line, source_item) as
    case
        when request_id = line_request_id(old_file, source_line, source_item)
            then line_request_id(history_file, source_line, source_item)
        when starts_with(request_id, 'batch:' || old_file || ':')
            then 'batch:' || history_file || ':' || substr(request_id, length('batch:' || old_file || ':') + 1)
        else request_id
    end;
