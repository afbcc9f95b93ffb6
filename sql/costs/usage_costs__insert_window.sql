-- Price every core.usage row of the window [$start, $end) set-wise from core.prices.
--
-- Price choice per request (ARCHITECTURE section 4): rows of the same provider and catalogue model
-- whose effective_from is on or before the request's UTC day and whose UTC time-of-day window (if
-- any) holds the request time; the long-context tier is chosen from the whole prompt of one request
-- (all four input classes: tier applies when tier_prompt_tokens > tier_start_tokens, as in
-- genai-prices; a usage bucket uses its reported context window) and then prices every class. Overrides beat the catalogue; a matching variant (batch, priority, flex)
-- beats standard; among the rest the highest precedence (latest active) and highest tier win.
-- A request with tokens in a class that has no price stays unpriced (costs null, never zero).
insert into core.usage_costs
with
usage_window as (
    select
        u.*,
        (u.ts at time zone 'UTC')::time as utc_time,
        case
            when u.is_batch then 'batch'
            when u.service_tier in ('priority', 'flex') then u.service_tier
            else 'standard'
        end as wanted_variant
    from core.usage u
    where u.day >= $start and u.day < $end
),
candidates as (
    select
        u.request_id,
        p.*,
        row_number() over (
            partition by u.request_id
            order by p.priority desc, (p.price_variant = u.wanted_variant) desc, p.precedence desc,
                     p.effective_from desc, p.tier_start_tokens desc
        ) as choice
    from usage_window u
    join core.prices p
        on p.provider = u.provider
        and p.price_model = u.price_model
        and p.effective_from <= u.day
        and p.price_variant in ('standard', u.wanted_variant)
        and (p.tier_start_tokens = 0 or coalesce(u.tier_prompt_tokens, u.prompt_tokens) > p.tier_start_tokens)
        and (
            p.utc_time_from is null
            or (p.utc_time_from < p.utc_time_to and u.utc_time >= p.utc_time_from and u.utc_time < p.utc_time_to)
            or (p.utc_time_from > p.utc_time_to and (u.utc_time >= p.utc_time_from or u.utc_time < p.utc_time_to))
        )
),
chosen as (
    select * from candidates where choice = 1
),
minimums as (
    -- the most specific cache-minimum fact per request (longest matching model prefix)
    select request_id, min_prompt_tokens
    from (
        select
            u.request_id,
            m.min_prompt_tokens,
            row_number() over (partition by u.request_id order by length(m.model_prefix) desc) as choice
        from usage_window u
        join core.cache_minimums m
            on m.provider = u.provider
            and (coalesce(u.price_model, '') like m.model_prefix || '%' or coalesce(lower(u.model), '') like m.model_prefix || '%')
    )
    where choice = 1
),
priced as (
    select
        u.*,
        c.price_variant,
        c.tier_start_tokens,
        c.input_per_mtok,
        c.cache_read_per_mtok,
        c.cache_write_5m_per_mtok,
        c.cache_write_1h_per_mtok,
        c.output_per_mtok,
        c.price_source,
        mn.min_prompt_tokens,
        case
            when u.model is null then 'no model in the log or source.yaml'
            when c.request_id is null then 'no price for ' || u.provider || ' model ' || u.model || ' (catalogue id '
                || coalesce(u.price_model, '?') || ') on ' || u.day || '; add it with --prices'
            when u.uncached_input_tokens > 0 and c.input_per_mtok is null then 'no input price'
            when u.cache_read_tokens > 0 and c.cache_read_per_mtok is null then 'no cache read price'
            when u.cache_write_5m_tokens > 0 and c.cache_write_5m_per_mtok is null then 'no cache write (5m) price'
            when u.cache_write_1h_tokens > 0 and c.cache_write_1h_per_mtok is null then 'no cache write (1h) price'
            when u.output_tokens > 0 and c.output_per_mtok is null then 'no output price'
            when u.prompt_tokens - u.uncached_input_tokens > 0 and c.input_per_mtok is null then 'no input price for the no-cache cost'
        end as unpriced_reason
    from usage_window u
    left join chosen c using (request_id)
    left join minimums mn using (request_id)
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
        case when is_priced then computed_cost end as cost_usd,
        case when is_priced then computed_no_cache_cost end as no_cache_cost_usd,
        case when is_priced then computed_no_cache_cost - computed_cost end as savings_usd,
        case when is_priced then computed_write_premium end as cache_write_premium_usd,
        case
            when cache_read_tokens > 0 then 'hit'
            when cache_write_5m_tokens + cache_write_1h_tokens > 0 then 'write'
            when prompt_tokens < min_prompt_tokens then 'ineligible'
            else 'miss'
        end as cache_outcome,
        min_prompt_tokens as min_cacheable_tokens
    from costed
)
select * from final;
