-- token_error(v, field): why the JSON value v is not a valid token count, or null when it is
-- (absent values are null too; callers decide whether a field is required). Counts must be
-- non-negative integers below 10^12 per row; integral floats such as 12.0 are accepted, strings,
-- fractions and other types are rejected (nothing is coerced or clamped).
create or replace macro token_error(v, field) as
    case
        when v is null then null
        when json_type(v) = 'UBIGINT' then
            case when v::varchar::hugeint >= 1000000000000 then field || ' is implausibly large (' || v::varchar || ' tokens)' end
        when json_type(v) = 'BIGINT' then
            case when v::varchar::hugeint < 0 then 'negative token count: ' || field || ' = ' || v::varchar end
        when json_type(v) = 'DOUBLE' then
            case
                when isnan(v::varchar::double) or isinf(v::varchar::double) then field || ' is not a finite number'
                when v::varchar::double < 0 then 'negative token count: ' || field || ' = ' || v::varchar
                when v::varchar::double >= 1e12 then field || ' is implausibly large (' || v::varchar || ' tokens)'
                when v::varchar::double <> floor(v::varchar::double) then 'non-integer token count: ' || field || ' = ' || v::varchar
            end
        when json_type(v) = 'VARCHAR' then field || ' is a string, not a number (' || left(v::varchar, 40) || ')'
        when json_type(v) = 'NULL' then field || ' is null'
        else field || ' has JSON type ' || json_type(v) || ', expected an integer'
    end;
