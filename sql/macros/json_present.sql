-- json_present(v): the JSON value v, or SQL null when it is absent or an explicit JSON null.
create or replace macro json_present(v) as
    case when v is null or json_type(v) = 'NULL' then null else v end;
