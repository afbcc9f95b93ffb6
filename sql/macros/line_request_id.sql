-- line_request_id(source_file, source_line, source_item): the request id of a record that carries none
-- of its own: 'line-' + the first 20 hex digits of md5('<file>:<line>[:<item>]') (item only when > 0),
-- stable across re-runs of the same file. Used by the general normaliser and the fast lane alike.
create or replace macro line_request_id(source_file, source_line, source_item) as
    'line-' || md5(source_file || ':' || source_line
                   || case when source_item > 0 then ':' || source_item else '' end)[1:20];
