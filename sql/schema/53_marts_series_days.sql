-- marts.series_days: each series' day (grain: day, provider, model, tenant, app), the per-day
-- aggregates the hit_rate_drop and rotating_preamble rules compare against their trailing baseline.
-- Written by the marts/cache_alerts asset for the days it rebuilds (and any baseline day missing),
-- so a nightly run aggregates the new day's requests only, not the whole baseline window again.
create table if not exists marts.series_days (
    day                   date,            -- UTC day
    provider              varchar,         -- cachemeter provider name
    model                 varchar,         -- model as reported
    tenant                varchar,         -- owning tenant
    app                   varchar,         -- calling application
    requests              bigint,          -- requests (sum of request_count)
    prompt_tokens         bigint,          -- tokens
    cache_read_tokens     bigint,          -- tokens
    read_discount_usd     decimal(38, 15), -- USD: prompt tokens x (input - cache read price), priced rows
    body_rows             bigint,          -- rows with a logged request body (rendered_chars present)
    distinct_openings     bigint,          -- distinct leading blocks (first 2,048 rendered characters) among them
    median_offset         double,          -- chars: median point where consecutive requests diverge
    common_span           varchar,         -- the most common kind of text at that point
    hits                  bigint,          -- rows with cache reads
    distinct_hit_prompts  bigint,          -- distinct prompt sizes (tokens) among the hits
    top_read_count        bigint           -- hits reading the day's most common cache-read size (tokens)
);
