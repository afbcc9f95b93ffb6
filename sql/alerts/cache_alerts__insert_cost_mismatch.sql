-- cost_mismatch: on a day of [$start, $end), a (provider, model) whose reported (billed) cost differs
-- from the computed cost of the same rows by more than $mismatch_min_usd and more than
-- $mismatch_share of the reported cost (marts.cost_reconciliation). Critical beyond
-- $mismatch_critical_share. Either the price book or the source's token counts are off.
insert into marts.cache_alerts by name
with
final as (
    select
        md5(concat_ws('|', 'cost_mismatch', provider, coalesce(model, ''), '', '', '', day::varchar)) as alert_id,
        day, 'cost_mismatch' as rule,
        case when abs(relative_difference) >= $mismatch_critical_share then 'critical' else 'warning' end as severity,
        provider, model,
        null::varchar as tenant, null::varchar as app, null::varchar as prefix_family,
        computed_cost_usd::double as observed, reported_cost_usd::double as baseline,
        null::decimal(38, 15) as lost_savings_usd,
        day as first_day,
        format('{} {}: the source reports {} USD billed but cachemeter computes {} USD for the same {:,} rows '
               || '(difference {} USD, {:.1f}%): check the price (--prices) or the source''s token counts',
               provider, coalesce(model, '(no model)'), round(reported_cost_usd, 6)::varchar, round(computed_cost_usd, 6)::varchar,
               rows_reported, round(difference_usd, 6)::varchar, 100 * relative_difference) as message
    from marts.cost_reconciliation
    where day >= $start and day < $end
      and abs(difference_usd) > $mismatch_min_usd
      and abs(relative_difference) > $mismatch_share
)
select * from final;
