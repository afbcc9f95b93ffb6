-- The window's price choices: one row per distinct pricing key of core.usage in [$start, $end)
-- (provider, price_model, day, is_batch, service_tier, model, inference_geo, speed, nulls equal), with that key's
-- candidate price rows best first and its minimum cacheable prompt. Where the key's inference geography or speed has
-- prices of its own (geo_price_factor, speed_price_factor: generated from pipelines/lib/price_rules.py, Anthropic's
-- US-only inference 1.1x and fast mode 2x or 6x), every candidate's token prices are scaled by their product
-- (DECIMAL(18, 9), as core.prices) and its price_source says so; a speed priced apart whose multiple for the model is
-- not known leaves the key without candidates and says why in unpriced_note.
-- A day has few keys (tens to hundreds, not one per request). sql/costs/usage_costs__insert_window.sql joins every usage row of the window to its key.
--
-- Why a table of its own: the planner picks a hash join's build side by estimated rows, and the
-- estimate of keys derived from the usage rows (a DISTINCT over them) is about the usage rows' own
-- count, so inside one statement a routine rewrite of core.prices or a few more row versions in
-- core.usage tipped it into building the hash table over the window's usage rows (measured at 20M
-- usage rows over four days: LEFT became RIGHT and repricing them ran out of the 1 GB memory limit;
-- on the bundled fixtures a second run did the same). A table's estimate is its row count, so the
-- keys stay the build side (tests/defs/test_pricing_plan.py).
--
-- Columns: the eight key columns as in core.usage; candidates LIST(STRUCT) of core.prices rows (null
-- when no price row matches the key: the request stays unpriced); min_prompt_tokens BIGINT, tokens
-- (null when no cache-minimum fact matches). Price choice order: ARCHITECTURE section 4.
create or replace temp table price_choices as
with
usage_keys as (
    select distinct provider, price_model, day, is_batch, service_tier, model, inference_geo, speed
    from core.usage
    where day >= $start and day < $end
),
keyed as (
    select
        k.*,
        lower(k.model) as model_lower,
        -- the multiple of every price the request's own report sets (null: none; list_transform below)
        case when geo_price_factor(k.provider, k.inference_geo) is not null
                  or speed_price_factor(k.provider, k.price_model, k.speed) is not null
             then coalesce(geo_price_factor(k.provider, k.inference_geo), 1)
                  * coalesce(speed_price_factor(k.provider, k.price_model, k.speed), 1) end as factor,
        case when geo_price_factor(k.provider, k.inference_geo) is not null
             then 'x' || regexp_replace(geo_price_factor(k.provider, k.inference_geo)::varchar, '\.?0+$', '')
                  || ' for inference_geo ' || k.inference_geo end as geo_label,
        case when speed_price_factor(k.provider, k.price_model, k.speed) is not null
             then 'x' || regexp_replace(speed_price_factor(k.provider, k.price_model, k.speed)::varchar, '\.?0+$', '')
                  || ' for speed ' || k.speed end as speed_label,
        case when speed_priced_apart(k.provider, k.speed) and speed_price_factor(k.provider, k.price_model, k.speed) is null
             then 'no ' || k.speed || '-mode price for ' || k.provider || ' model ' || coalesce(k.price_model, k.model)
                  || ' (usage.speed ' || k.speed || '): its multiple of the list price is not known' end as unpriced_note,
        case
            when k.is_batch then 'batch'
            when k.service_tier in ('priority', 'flex') then k.service_tier
            else 'standard'
        end as wanted_variant
    from usage_keys k
),
-- each key's candidate rows best first; a request takes the first whose long-context tier and
-- time-of-day window hold it. The wanted variant comes before an override: a priority or flex request of an
-- overridden model takes the catalogue's priority or flex price where it has one (an override states standard
-- rates; its batch rates are derived beside it, lib/prices.BATCH_DISCOUNTS)
candidate_lists as (
    select
        k.provider, k.price_model, k.day, k.wanted_variant,
        list(p order by (p.price_variant = k.wanted_variant) desc, p.priority desc, p.precedence desc,
                        p.effective_from desc, p.tier_start_tokens desc) as candidates
    from (select distinct provider, price_model, day, wanted_variant from keyed) k
    join core.prices p
        on p.provider = k.provider
        and p.price_model = k.price_model
        and p.effective_from <= k.day
        and p.price_variant in ('standard', k.wanted_variant)
    group by all
),
minimums as (
    -- the most specific cache-minimum fact per (provider, model): the longest matching model prefix
    select
        k.provider, k.price_model, k.model_lower,
        arg_max(m.min_prompt_tokens, length(m.model_prefix)) as min_prompt_tokens
    from (select distinct provider, price_model, model_lower from keyed) k
    join core.cache_minimums m
        on m.provider = k.provider
        and (coalesce(k.price_model, '') like m.model_prefix || '%' or coalesce(k.model_lower, '') like m.model_prefix || '%')
    group by all
)
select
    k.provider, k.price_model, k.day, k.is_batch, k.service_tier, k.model, k.inference_geo, k.speed,
    case when k.unpriced_note is not null then null
         when k.factor is null then c.candidates
         else list_transform(c.candidates, lambda p: struct_update(p,
             input_per_mtok := (p.input_per_mtok * k.factor)::decimal(18, 9),
             cache_read_per_mtok := (p.cache_read_per_mtok * k.factor)::decimal(18, 9),
             cache_write_5m_per_mtok := (p.cache_write_5m_per_mtok * k.factor)::decimal(18, 9),
             cache_write_1h_per_mtok := (p.cache_write_1h_per_mtok * k.factor)::decimal(18, 9),
             output_per_mtok := (p.output_per_mtok * k.factor)::decimal(18, 9),
             price_source := concat_ws(', ', p.price_source, k.geo_label, k.speed_label)))
    end as candidates,
    k.unpriced_note,
    mn.min_prompt_tokens
from keyed k
left join candidate_lists c using (provider, price_model, day, wanted_variant)
left join minimums mn
    on mn.provider = k.provider
    and mn.price_model is not distinct from k.price_model
    and mn.model_lower is not distinct from k.model_lower;
