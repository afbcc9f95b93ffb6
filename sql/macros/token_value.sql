-- token_value(v): the JSON value v as a BIGINT token count (use only where token_error(v) is null).
create or replace macro token_value(v) as
    coalesce(try_cast(v::varchar as bigint), try_cast(try_cast(v::varchar as double) as bigint));
