-- fast_items: per-file scratch table (connection-local) of the fast lane's results, one row per
-- non-blank line in file order (rowid + 1 = line number); fast_items__read_jsonl.sql replaces it
-- when the lane applies. Created empty first so that the file_items view always binds.
create or replace temp table fast_items (
    source_format         varchar,
    accepted              boolean,      -- false: deferred to the general normaliser
    request_id            varchar,      -- null: the line's own id (file_items)
    ts                    timestamptz,
    provider              varchar,
    model                 varchar,
    tenant                varchar,
    app                   varchar,
    service_tier          varchar,
    prefix_family         varchar,
    prompt_tokens         bigint,
    uncached_input_tokens bigint,
    cache_read_tokens     bigint,
    cache_write_5m_tokens bigint,
    cache_write_1h_tokens bigint,
    output_tokens         bigint,
    reasoning_tokens      bigint,
    request_count         integer,
    tier_prompt_tokens    bigint
);
