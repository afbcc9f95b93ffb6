-- Rebuild marts.cost_reconciliation for the window [$start, $end): per day, provider and model, the
-- reported (billed) cost of the rows that carry one against the cost computed at list rates for exactly
-- those rows, and the rates the bills imply.
--
-- Implied rates: a bill is one amount per row, so per (day, provider, model) the priced billed rows
-- are fitted as billed = a x (list cost of the prompt side: uncached input, cache reads, cache writes)
-- + b x (list cost of output), least squares (double). a and b are solved when the rows' prompt/output
-- mixes differ (the determinant is above 1e-6 of its largest possible value, and both come out
-- positive): ratio_basis 'prompt_and_output'. Otherwise one ratio, reported / computed, stands for
-- every class ('one_ratio'). Within the prompt side the catalogue's proportions (read and write as
-- multiples of input) are kept: providers price cache classes as multiples of the input rate.
insert into marts.cost_reconciliation by name
with
reported as (
    select
        u.day, u.provider, u.model, u.request_count, c.priced, c.price_model, c.tier_start_tokens, c.price_variant,
        u.reported_cost_usd, c.list_cost_usd,
        c.input_per_mtok, c.cache_read_per_mtok, c.cache_write_5m_per_mtok, c.cache_write_1h_per_mtok, c.output_per_mtok,
        -- the fit's inputs, in USD (double): list cost of the output and of the prompt side
        usd(u.output_tokens, coalesce(c.output_per_mtok, 0))::double as list_output,
        (c.list_cost_usd - usd(u.output_tokens, coalesce(c.output_per_mtok, 0)))::double as list_prompt,
        u.reported_cost_usd::double as billed
    from core.usage u
    join core.usage_costs c using (request_id, day)  -- (day: the window's rows only)
    where u.day >= $start and u.day < $end and u.reported_cost_usd is not null
),
sums as (
    select
        day, provider, model,
        count(*) as rows_reported,
        sum(request_count)::bigint as requests,
        count(*) filter (where not priced) as unpriced_rows,
        coalesce(sum(reported_cost_usd) filter (where priced), 0) as reported_cost_usd,
        coalesce(sum(list_cost_usd) filter (where priced), 0) as computed_cost_usd,
        -- the catalogue model and rates of the day's base rows (lowest tier, standard variant first)
        min(struct_pack(tier := tier_start_tokens, other_variant := price_variant <> 'standard', price_model := price_model,
                        i := input_per_mtok, r := cache_read_per_mtok, w5 := cache_write_5m_per_mtok,
                        w1 := cache_write_1h_per_mtok, o := output_per_mtok)) filter (where priced) as base,
        sum(list_prompt * list_prompt) filter (where priced) as spp,
        sum(list_output * list_output) filter (where priced) as soo,
        sum(list_prompt * list_output) filter (where priced) as spo,
        sum(billed * list_prompt) filter (where priced) as sbp,
        sum(billed * list_output) filter (where priced) as sbo
    from reported
    group by day, provider, model
),
fitted as (
    select
        s.*,
        case when spp * soo - spo * spo > 1e-6 * spp * soo
             then (sbp * soo - sbo * spo) / (spp * soo - spo * spo) end as a,
        case when spp * soo - spo * spo > 1e-6 * spp * soo
             then (sbo * spp - sbp * spo) / (spp * soo - spo * spo) end as b,
        (reported_cost_usd::double / nullif(computed_cost_usd::double, 0)) as one_ratio
    from sums s
),
ratios as (
    select
        f.*,
        case when a > 0 and b > 0 then 'prompt_and_output' when one_ratio is not null then 'one_ratio' end as ratio_basis,
        case when a > 0 and b > 0 then a else one_ratio end as prompt_ratio,
        case when a > 0 and b > 0 then b else one_ratio end as output_ratio
    from fitted f
),
final as (
    select
        day,
        provider,
        model,
        rows_reported,
        requests,
        unpriced_rows,
        reported_cost_usd,
        computed_cost_usd,
        reported_cost_usd - computed_cost_usd as difference_usd,
        ((reported_cost_usd - computed_cost_usd) / nullif(reported_cost_usd, 0))::double as relative_difference,
        base.price_model as price_model,
        prompt_ratio as prompt_rate_ratio,
        output_ratio as output_rate_ratio,
        ratio_basis,
        -- no line when a rate it implies is past DECIMAL(18, 6) (over $10^12 per million tokens: a bill of $10M for two
        -- tokens failed the day's build on a cast error, every run, a break test)
        case when ratio_basis is not null and (base.i is null or implied.i is not null) and (base.r is null or implied.r is not null)
                  and (base.w5 is null or implied.w5 is not null) and (base.w1 is null or implied.w1 is not null)
                  and (base.o is null or implied.o is not null)
             then concat_ws(',', provider, base.price_model, day::varchar,
                            coalesce(plain_decimal(implied.i), ''), coalesce(plain_decimal(implied.r), ''),
                            coalesce(plain_decimal(implied.w5), ''), coalesce(plain_decimal(implied.w1), ''),
                            coalesce(plain_decimal(implied.o), ''))
        end as implied_prices_line
    from (
        select r.*, struct_pack(
            i := try_cast(round(base.i * prompt_ratio, 6) as decimal(18, 6)),
            r := try_cast(round(base.r * prompt_ratio, 6) as decimal(18, 6)),
            w5 := try_cast(round(base.w5 * prompt_ratio, 6) as decimal(18, 6)),
            w1 := try_cast(round(base.w1 * prompt_ratio, 6) as decimal(18, 6)),
            o := try_cast(round(base.o * output_ratio, 6) as decimal(18, 6))) as implied
        from ratios r
    )
)
select * from final;
