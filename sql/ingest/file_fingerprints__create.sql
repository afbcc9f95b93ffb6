-- file_fingerprints: per-file scratch table (connection-local) of prompt fingerprints of the
-- records that carry a request body, joined into core.usage when the file is published.
create or replace temp table file_fingerprints (
    source_line             bigint,
    family                  varchar,    -- 'fp:' + hash of the first 512 rendered characters
    system_sha              varchar,
    tools_sha               varchar,
    opening_hashes          varchar[],
    rendered_chars          bigint,
    divergence_offset_chars bigint,
    divergence_span         varchar
);
