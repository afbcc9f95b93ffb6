-- cross_tenant_prefix: one prefix family used on a day of [$start, $end) by several tenants, one of
-- which the configuration marks as isolated ($isolated_tenants): a shared opening (and its cache)
-- crosses a boundary that should not be crossed. Series-level families (no shared evidence) are ignored.
insert into marts.cache_alerts by name
with
family_tenants as (
    select
        u.day, u.prefix_family, u.provider, u.model,
        list(distinct u.tenant order by u.tenant) as tenants,
        sum(u.request_count) as requests
    from core.usage u
    where u.day >= $start and u.day < $end and u.prefix_family not like 'series:%'
    group by all
),
final as (
    select
        md5(concat_ws('|', 'cross_tenant_prefix', provider, coalesce(model, ''), '', '', prefix_family, day::varchar)) as alert_id,
        day, 'cross_tenant_prefix' as rule, 'critical' as severity, provider, model,
        array_to_string(tenants, ',') as tenant, null::varchar as app, prefix_family,
        len(tenants)::double as observed, 1::double as baseline, null::decimal(38, 15) as lost_savings_usd,
        day as first_day,
        format('prefix family {} is shared by tenants {} although {} must be isolated ({:,} requests)',
               prefix_family, array_to_string(tenants, ', '),
               array_to_string(list_intersect(tenants, $isolated_tenants::varchar[]), ', '), requests) as message
    from family_tenants
    where len(tenants) > 1 and len(list_intersect(tenants, $isolated_tenants::varchar[])) > 0
)
select * from final;
