-- utc_instant(text): the TIMESTAMPTZ an ISO-8601 time's text names, or null when it names none; text without a
-- zone is UTC. Every ingest reads a logged time through this, not `try_cast(text as timestamptz)`, because:
--  * DuckDB 1.5.5's cast carries a named zone over to the texts after it in the same vector: of
--    ('2026-11-20 09:00:00', '2026-11-20T09:00:00 Asia/Tokyo', '2026-11-20 09:00:00') the third came out
--    00:00 UTC, as if in Tokyo (a break test); a text without a zone goes through TIMESTAMP instead, which
--    reads no zone;
--  * the cast takes any two-digit offset: '+99:99' moved a request by four days, '+24:00' by one. Offsets in
--    use run from -12:00 to +14:00 (the IANA time zone database), so an hour above 14 or a minute above 59 is
--    no time: null, and the request is quarantined as one without a parseable time.
-- A text ending in Z (the common case) is cast directly: it names its zone.
create or replace macro utc_instant(s) as
    case
        when ends_with(s, 'Z') then try_cast(s as timestamptz)
        when not regexp_matches(substr(s, 11), '[A-SU-Za-z+-]') then try_cast(try_cast(s as timestamp) as timestamptz)
        when regexp_matches(s, '\d[+-]((1[5-9]|[2-9]\d)(:?\d{2})?|\d{2}:?[6-9]\d)\s*$') then null
        else try_cast(s as timestamptz)
    end;
