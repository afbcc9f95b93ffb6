-- stage.usage_rows.rendered_chars: length of the rendered prompt, characters. Null when the log carried no request body.
alter table stage.usage_rows add column if not exists rendered_chars bigint;
