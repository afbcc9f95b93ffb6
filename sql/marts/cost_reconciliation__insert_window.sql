-- Rebuild marts.cost_reconciliation for the window [$start, $end): per day, provider and model, the
-- reported (billed) cost of the rows that carry one against the cost computed for exactly those rows.
insert into marts.cost_reconciliation by name
with
reported as (
    select day, provider, model, request_count, priced, reported_cost_usd, cost_usd
    from core.usage_priced
    where day >= $start and day < $end and reported_cost_usd is not null
),
final as (
    select
        day,
        provider,
        model,
        count(*) as rows_reported,
        sum(request_count)::bigint as requests,
        count(*) filter (where not priced) as unpriced_rows,
        coalesce(sum(reported_cost_usd) filter (where priced), 0) as reported_cost_usd,
        coalesce(sum(cost_usd) filter (where priced), 0) as computed_cost_usd,
        coalesce(sum(reported_cost_usd) filter (where priced), 0) - coalesce(sum(cost_usd) filter (where priced), 0)
            as difference_usd,
        ((coalesce(sum(reported_cost_usd) filter (where priced), 0) - coalesce(sum(cost_usd) filter (where priced), 0))
            / nullif(sum(reported_cost_usd) filter (where priced), 0))::double as relative_difference
    from reported
    group by day, provider, model
)
select * from final;
