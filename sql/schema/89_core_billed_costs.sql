-- core.billed_costs: what the provider billed, as its cost report states it (grain: one result row of a
-- report page; today the Anthropic Admin cost report, GET /v1/organizations/cost_report, 1-day buckets,
-- grouped by workspace_id and description). Loaded from the raw pages under
-- <logs>/_cachemeter/usage_api/anthropic_cost_report/<day>/ (pipelines/lib/usage_api/cost_report.py), a
-- day replaced whole. Money is exact: amount_cents is the report's decimal string as it is, in the lowest
-- currency unit (cents); billed_usd = amount_cents / 100. marts.billed_cost_reconciliation compares it
-- per day with the costs cachemeter computed (core.usage_costs).
create table if not exists core.billed_costs (
    day            date,            -- UTC day of the report bucket (starting_at)
    provider       varchar,         -- cachemeter provider name: anthropic
    source_file    varchar,         -- the page file, relative to the logs root
    result_index   integer,         -- 1-based position of the result in the day's pages
    workspace_id   varchar,         -- the report's workspace (null: the default workspace or not a workspace cost)
    description    varchar,         -- the report's line, e.g. 'Claude Haiku 4.5 Usage - Input Tokens', 'Web Search'
    cost_type      varchar,         -- tokens, web_search, code_execution, ... (as reported)
    context_window varchar,         -- e.g. '0-200k' (tokens lines only)
    model          varchar,         -- the reported model id (tokens lines only)
    service_tier   varchar,         -- standard, batch, priority (tokens lines only)
    token_type     varchar,         -- uncached_input_tokens, cache_read_input_tokens, output_tokens, cache_creation...
    inference_geo  varchar,         -- as reported (null when the report gives none)
    currency       varchar,         -- ISO currency of amount_cents: USD
    amount_cents   decimal(38, 10), -- billed amount in cents, exactly as reported ('128463.00' = 128463.00 cents)
    billed_usd     decimal(38, 12)  -- USD, amount_cents / 100, exact
);
