-- core.usage.rendered_chars: length of the rendered prompt, characters. Null when the log carried no request body.
alter table core.usage add column if not exists rendered_chars bigint;
