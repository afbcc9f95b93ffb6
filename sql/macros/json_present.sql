-- json_present(v): the JSON value v, or SQL null when it is absent or an explicit JSON null (compared as
-- text, which needs no parse: a JSON null value's text is exactly 'null').
create or replace macro json_present(v) as
    case when v::varchar = 'null' then null else v end;
