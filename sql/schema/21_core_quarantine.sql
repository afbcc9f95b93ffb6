-- core.quarantine: every rejected record with the reason it was rejected (grain: record).
-- raw_excerpt never holds prompt or completion text: for a line that parses it keeps only
-- envelope metadata and the usage object; for one that does not, its length, a hash and
-- where parsing failed.
create table if not exists core.quarantine (
    source_file    varchar,      -- log file, relative to the logs root
    source_line    bigint,       -- 1-based line (or array element); 0 for a whole-file problem
    source_format  varchar,      -- adapter chosen for the line, null when no shape was recognised
    reason         varchar,      -- specific reason, e.g. 'malformed JSON: ...', 'cache tokens exceed prompt: ...'
    raw_excerpt    varchar,      -- privacy-safe excerpt (JSON), at most 2,000 characters
    quarantined_at timestamptz   -- when the record was rejected (UTC)
);
