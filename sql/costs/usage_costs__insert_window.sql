-- Price every core.usage row of the window [$start, $end) set-wise from core.prices.
--
-- Price choice per request (ARCHITECTURE section 4): rows of the same provider and catalogue model
-- whose effective_from is on or before the request's UTC day and whose UTC time-of-day window (if
-- any) holds the request time; the long-context tier is chosen from the whole prompt of one request
-- (all four input classes: tier applies when tier_prompt_tokens > tier_start_tokens, as in
-- genai-prices; a usage bucket uses its reported context window) and then prices every class. A matching variant (batch, priority, flex) beats standard;
-- then overrides beat the catalogue; among the rest the highest precedence (latest active) and highest tier win.
-- A request with tokens in a class that has no price stays unpriced (costs null, never zero).
--
-- Billed cost is the truth where the log has it: a priced row that carries what the source billed
-- (core.usage.reported_cost_usd) costs exactly that (cost_basis 'billed'); list_cost_usd keeps the
-- catalogue amount. A bill is one total per row, so the rates it implies are taken to be the list
-- rates scaled by billed_to_list = billed / list: savings and write premiums are scaled by that
-- ratio (rounded to 1e-12 USD) and no_cache_cost_usd = cost_usd + savings_usd. docs/focus.md.
insert into core.usage_costs by name
with
-- not materialized: the join below takes the few columns it needs from the table scan
usage_window as not materialized (
    select
        u.*,
        utc_time_of_day(u.ts) as utc_time,
        coalesce(u.tier_prompt_tokens, u.prompt_tokens) as tier_prompt
    from core.usage u
    where u.day >= $start and u.day < $end
),
-- each request takes its key's price choices from the temp table price_choices, built just before from
-- the same window (sql/costs/price_choices__create.sql, which says why it is a table of its own)
chosen as (
    select
        u.*,
        pc.min_prompt_tokens,
        pc.unpriced_note,
        -- a key whose best candidate has no long-context tier and no time-of-day window prices every
        -- request of the key with it (the common case): no per-row filter over its list
        case
            when pc.candidates[1].tier_start_tokens = 0 and pc.candidates[1].utc_time_from is null then pc.candidates[1]
            else list_filter(pc.candidates, lambda price:
                (price.tier_start_tokens = 0 or u.tier_prompt > price.tier_start_tokens)
                -- a window of weekdays only (DeepSeek's peak, lib/prices.WEEKDAY_WINDOWS) is no candidate on a weekend
                and not (coalesce(price.weekdays_only, false) and isodow(u.day) >= 6)
                and (
                    price.utc_time_from is null
                    or (price.utc_time_from < price.utc_time_to and u.utc_time >= price.utc_time_from and u.utc_time < price.utc_time_to)
                    or (price.utc_time_from > price.utc_time_to and (u.utc_time >= price.utc_time_from or u.utc_time < price.utc_time_to))
                ))[1]
        end as c
    from usage_window u
    left join price_choices pc
        on pc.provider = u.provider
        and pc.day = u.day
        and pc.price_model is not distinct from u.price_model
        and pc.is_batch is not distinct from u.is_batch
        and pc.service_tier is not distinct from u.service_tier
        and pc.model is not distinct from u.model
        and pc.inference_geo is not distinct from u.inference_geo
        and pc.speed is not distinct from u.speed
),
priced as (
    select
        u.* exclude (c),
        u.c.price_variant,
        u.c.tier_start_tokens,
        u.c.input_per_mtok,
        u.c.cache_read_per_mtok,
        u.c.cache_write_5m_per_mtok,
        u.c.cache_write_1h_per_mtok,
        u.c.output_per_mtok,
        u.c.price_source,
        case
            when u.model is null then 'no model in the log or source.yaml'
            when u.unpriced_note is not null then u.unpriced_note
            when u.c is null then 'no price for ' || u.provider || ' model ' || u.model || ' (catalogue id '
                || coalesce(u.price_model, '?') || ') on ' || u.day || '; add it with --prices'
            when u.uncached_input_tokens > 0 and u.c.input_per_mtok is null then 'no input price'
            when u.cache_read_tokens > 0 and u.c.cache_read_per_mtok is null then 'no cache read price'
            when u.cache_write_5m_tokens > 0 and u.c.cache_write_5m_per_mtok is null then 'no cache write (5m) price'
            when u.cache_write_1h_tokens > 0 and u.c.cache_write_1h_per_mtok is null then 'no cache write (1h) price'
            when u.output_tokens > 0 and u.c.output_per_mtok is null then 'no output price'
            when u.prompt_tokens - u.uncached_input_tokens > 0 and u.c.input_per_mtok is null then 'no input price for the no-cache cost'
        end as unpriced_reason
    from chosen u
),
costed as (
    select
        p.*,
        p.unpriced_reason is null as is_priced,
        usd(p.uncached_input_tokens, coalesce(p.input_per_mtok, 0))
            + usd(p.cache_read_tokens, coalesce(p.cache_read_per_mtok, 0))
            + usd(p.cache_write_5m_tokens, coalesce(p.cache_write_5m_per_mtok, 0))
            + usd(p.cache_write_1h_tokens, coalesce(p.cache_write_1h_per_mtok, 0))
            + usd(p.output_tokens, coalesce(p.output_per_mtok, 0)) as computed_cost,
        usd(p.prompt_tokens, coalesce(p.input_per_mtok, 0))
            + usd(p.output_tokens, coalesce(p.output_per_mtok, 0)) as computed_no_cache_cost,
        usd(p.cache_write_5m_tokens, coalesce(p.cache_write_5m_per_mtok - p.input_per_mtok, 0))
            + usd(p.cache_write_1h_tokens, coalesce(p.cache_write_1h_per_mtok - p.input_per_mtok, 0)) as computed_write_premium
    from priced p
),
billed as (
    select
        c.*,
        case when c.is_priced then coalesce(c.reported_cost_usd, c.computed_cost) end as billed_cost,
        case when c.is_priced and c.reported_cost_usd is not null and c.computed_cost > 0
             then c.reported_cost_usd::double / c.computed_cost::double end as ratio
    from costed c
),
scaled as (
    select
        b.*,
        case when not b.is_priced then null
             when b.ratio is null then b.computed_no_cache_cost - b.computed_cost
             else round((b.computed_no_cache_cost - b.computed_cost)::double * b.ratio, 12)::decimal(38, 15)
        end as scaled_savings
    from billed b
),
final as (
    select
        request_id,
        day,
        provider,
        price_model,
        price_variant,
        tier_start_tokens,
        input_per_mtok,
        cache_read_per_mtok,
        cache_write_5m_per_mtok,
        cache_write_1h_per_mtok,
        output_per_mtok,
        price_source,
        is_priced as priced,
        unpriced_reason,
        billed_cost as cost_usd,
        case when is_priced then billed_cost + scaled_savings end as no_cache_cost_usd,
        scaled_savings as savings_usd,
        case when not is_priced then null
             when ratio is null then computed_write_premium
             else round(computed_write_premium::double * ratio, 12)::decimal(38, 15) end as cache_write_premium_usd,
        case when is_priced then computed_cost end as list_cost_usd,
        case when is_priced then (case when reported_cost_usd is null then 'list' else 'billed' end) end as cost_basis,
        ratio as billed_to_list,
        case
            when cache_read_tokens > 0 then 'hit'
            when cache_write_5m_tokens + cache_write_1h_tokens > 0 then 'write'
            when prompt_tokens < min_prompt_tokens then 'ineligible'
            else 'miss'
        end as cache_outcome,
        min_prompt_tokens as min_cacheable_tokens,
        request_count,
        -- the quantities priced (93_core_usage_costs__add_priced_quantities.sql)
        uncached_input_tokens, cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, output_tokens,
        reported_cost_usd
    from scaled
)
select * from final;
