-- core.usage_costs: one row per core.usage row (keyed by request_id, partitioned by UTC day),
-- priced set-wise from core.prices. All money is USD, exact DECIMAL(38,15); costs are null (never
-- zero) when priced = false.
create table if not exists core.usage_costs (
    request_id                varchar,   -- the core.usage row this prices (key)
    day                       date,            -- UTC day (partition key)
    provider                  varchar,   -- cachemeter provider name
    price_model               varchar,   -- catalogue model id the price was looked up with
    price_variant             varchar,         -- price variant used: standard, batch, priority, flex
    tier_start_tokens         bigint,          -- long-context tier chosen from the whole prompt (0 = base tier)
    input_per_mtok            decimal(18, 9),  -- USD per million tokens applied to uncached input
    cache_read_per_mtok       decimal(18, 9),  -- USD per million tokens applied to cache reads
    cache_write_5m_per_mtok   decimal(18, 9),  -- USD per million tokens applied to 5-minute cache writes
    cache_write_1h_per_mtok   decimal(18, 9),  -- USD per million tokens applied to 1-hour cache writes
    output_per_mtok           decimal(18, 9),  -- USD per million output tokens
    price_source              varchar,         -- which price book row priced it
    priced                    boolean,         -- false when no price covers every token class present
    unpriced_reason           varchar,         -- why not priced, e.g. 'no price for model ...'
    cost_usd                  decimal(38, 15), -- USD billed (FOCUS BilledCost): what the source reports as billed (core.usage.reported_cost_usd) where it does, else every class at its list rate (= list_cost_usd)
    no_cache_cost_usd         decimal(38, 15), -- USD for the same tokens with all input at the uncached rate, no write premium, at the rates the bill implies (cost_usd + savings_usd)
    savings_usd               decimal(38, 15), -- USD, no_cache_cost_usd - cost_usd (negative when write premiums exceed read savings); the list saving x billed_to_list on billed rows
    cache_write_premium_usd   decimal(38, 15), -- USD paid above the uncached rate for cache writes (x billed_to_list on billed rows)
    cache_outcome             varchar,         -- hit (read > 0), write (write > 0, no read), miss, ineligible (prompt below the cacheable minimum)
    min_cacheable_tokens      bigint           -- tokens, the minimum used to decide eligibility (null = unknown, treated as eligible)
);
