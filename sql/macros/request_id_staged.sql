-- request_id_staged(request_id, source_file, source_line, source_item, batch_marker): a staged record's request id
-- under its own file: its own id, else line_request_id of its file and line; a batch result's custom_id, which the
-- general normaliser scoped to the batch as 'batch:' || batch_marker || ':' || custom_id, scoped to its file instead
-- ('batch:<file>:<custom_id>'). Used by staged_items__create.sql and staged_items__create_view.sql.
create or replace macro request_id_staged(request_id, source_file, source_line, source_item, batch_marker) as
    case
        when request_id is null then line_request_id(source_file, source_line, source_item)
        when starts_with(request_id, 'batch:' || batch_marker || ':')
            then 'batch:' || source_file || ':' || substr(request_id, length('batch:' || batch_marker || ':') + 1)
        else request_id
    end;
