-- write_of_ttl(details, ttl): cache-write tokens of one TTL ('5m' or '1h') from a per-TTL breakdown, a JSON
-- array of {"ttl": "5m" | "1h", "inputTokens": n} (Bedrock Converse usage.cacheDetails, AWS Bedrock API
-- reference CacheDetail; formats.yaml field write_by_ttl): the sum of the matching entries' inputTokens (0 when
-- none matches), or null when there is no non-empty breakdown. Use only where write_by_ttl_error is null.
create or replace macro write_of_ttl(details, ttl) as
    case when json_type(details) = 'ARRAY' and json_array_length(details) > 0 then
        coalesce(list_sum(list_transform(
            list_filter(json_extract(details, '$[*]'), lambda e: (e ->> '$.ttl') = ttl),
            lambda e: token_value(e -> '$.inputTokens'))), 0)
    end;
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
