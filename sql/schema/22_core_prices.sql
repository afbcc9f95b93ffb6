-- core.prices: the price book (grain: provider, price_model, price_variant, effective_from,
-- time window, tier). Flattened from the genai-prices bundled snapshot (no network) plus user
-- overrides from --prices. Prices are USD per million tokens, exact DECIMAL. A null price means
-- the class is not offered: usage in that class leaves the row unpriced, never costed at zero.
create table if not exists core.prices (
    provider                 varchar,        -- cachemeter provider name (openai, anthropic, gemini, bedrock, ...)
    price_model              varchar,        -- catalogue model id (or the override's model id)
    price_variant            varchar,        -- standard, batch, priority, flex
    effective_from           date,           -- first UTC day the price applies
    effective_to             date,           -- first UTC day a later dated price replaces it; null = open
    utc_time_from            time,           -- time-of-day window start (UTC), null = all day (DeepSeek off-peak style)
    utc_time_to              time,           -- time-of-day window end (UTC, exclusive)
    tier_start_tokens        bigint,         -- tier applies when the whole prompt (all input classes) exceeds this many tokens; 0 = base
    input_per_mtok           decimal(18, 9), -- USD per million uncached input tokens
    cache_read_per_mtok      decimal(18, 9), -- USD per million cache read tokens
    cache_write_5m_per_mtok  decimal(18, 9), -- USD per million cache write tokens, default TTL
    cache_write_1h_per_mtok  decimal(18, 9), -- USD per million cache write tokens, 1-hour TTL
    output_per_mtok          decimal(18, 9), -- USD per million output tokens
    priority                 integer,        -- 1 = user override (wins), 0 = catalogue
    precedence               integer,        -- among rows of one model, the higher active one wins (genai-prices: last active price wins)
    price_source             varchar         -- 'genai-prices <version>' or 'override <file>'
);
