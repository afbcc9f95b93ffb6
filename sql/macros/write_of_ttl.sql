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
