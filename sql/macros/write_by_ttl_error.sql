-- write_by_ttl_error(details): why a per-TTL cache-write breakdown cannot be used (not an array, an entry that
-- is not an object, a TTL other than 5m / 1h, a missing or invalid inputTokens), or null when it can.
create or replace macro write_by_ttl_error(details) as
    case
        when details is null then null
        when json_type(details) <> 'ARRAY' then 'cache write TTL breakdown is JSON ' || lower(json_type(details)) || ', not an array'
        else list_first(list_filter(list_transform(json_extract(details, '$[*]'), lambda e:
            case
                when json_type(e) <> 'OBJECT' then 'cache write TTL breakdown entry is JSON ' || lower(json_type(e)) || ', not an object'
                when coalesce(e ->> '$.ttl', '') not in ('5m', '1h')
                    then 'cache write TTL ' || coalesce('''' || (e ->> '$.ttl') || '''', 'missing') || ' is neither 5m nor 1h'
                when (e -> '$.inputTokens') is null then 'cache write TTL breakdown entry has no inputTokens'
                else token_error(e -> '$.inputTokens', 'cache write ' || (e ->> '$.ttl') || ' tokens')
            end), lambda r: r is not null))
    end;
