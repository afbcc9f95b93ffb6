-- price_mismatch: on a day of [$start, $end), a (provider, model) whose bills consistently disagree
-- with the list price, however few dollars that is (cost_mismatch also needs its min_usd): the
-- day's billed cost differs from its list cost by at least $price_share of the billed, and at least
-- $price_min_rows of its priced billed rows each differ by at least $price_share in that same direction.
-- Critical from $price_critical_share. Names the rates the bills imply and the --prices override line
-- that would make the catalogue price these rows as billed (marts.cost_reconciliation).
insert into marts.cache_alerts by name
with
rows_off as (
    select
        u.day, u.provider, u.model,
        count(*) filter (where c.cost_usd - c.list_cost_usd >= $price_share * c.cost_usd) as rows_above,
        count(*) filter (where c.list_cost_usd - c.cost_usd >= $price_share * c.cost_usd) as rows_below
    from core.usage u
    join core.usage_costs c using (request_id, day)  -- (day: the window's rows only)
    where u.day >= $start and u.day < $end and c.cost_basis = 'billed' and c.cost_usd > 0
    group by all
),
mismatched as (
    select r.*, o.rows_above, o.rows_below,
           string_split(r.implied_prices_line, ',') as line_cells,
           case when r.difference_usd > 0 then o.rows_above else o.rows_below end as rows_off_list
    from marts.cost_reconciliation r
    join rows_off o on o.day = r.day and o.provider = r.provider and o.model is not distinct from r.model
    where r.day >= $start and r.day < $end
      and r.implied_prices_line is not null
      and abs(r.relative_difference) >= $price_share
),
final as (
    select
        md5(concat_ws('|', 'price_mismatch', provider, coalesce(model, ''), '', '', '', day::varchar)) as alert_id,
        day, 'price_mismatch' as rule,
        case when abs(relative_difference) >= $price_critical_share then 'critical' else 'warning' end as severity,
        provider, model,
        null::varchar as tenant, null::varchar as app, null::varchar as prefix_family,
        computed_cost_usd::double as observed, reported_cost_usd::double as baseline,
        null::decimal(38, 15) as lost_savings_usd,
        day as first_day,
        format('{} {}: billed {} USD is {:.1f}% {} the list price ({} USD) on {:,} of {:,} billed rows; the bills imply '
               || 'input {}, cache read {}, cache write {} (1h {}), output {} USD/MTok ({:.4g}x the list rate for the '
               || 'prompt side, {:.4g}x for output; {}); to price as billed, add to --prices: {}',
               provider, coalesce(model, '(no model)'), round(reported_cost_usd, 6)::varchar,
               100 * abs(relative_difference), case when difference_usd > 0 then 'above' else 'below' end,
               round(computed_cost_usd, 6)::varchar, rows_off_list, rows_reported,
               line_cells[-5], line_cells[-4], line_cells[-3], line_cells[-2], line_cells[-1],
               prompt_rate_ratio, output_rate_ratio, replace(ratio_basis, '_', ' '), implied_prices_line) as message
    from mismatched
    where rows_off_list >= $price_min_rows
)
select * from final;
