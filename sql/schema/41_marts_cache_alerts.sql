-- marts.cache_alerts: one row per incident (grain: rule, scope, day). alert_id is a hash of rule,
-- scope and day, so re-running a day never duplicates an alert.
create table if not exists marts.cache_alerts (
    alert_id          varchar,         -- stable id: md5 of rule | provider | model | tenant | app | prefix_family | day
    day               date,            -- UTC day the incident was observed
    rule              varchar,         -- rotating_preamble, hit_rate_drop, negative_cache_roi, below_cache_minimum, cross_tenant_prefix, unpriced_usage, cost_mismatch, price_mismatch, data_quality
    severity          varchar,         -- warning or critical
    provider          varchar,           -- provider of the scope (null for rules without one)
    model             varchar,           -- model as reported (null for rules without one)
    tenant            varchar,           -- tenant of the scope (for cross_tenant_prefix: the tenants sharing the family)
    app               varchar,           -- app of the scope (null for rules without one)
    prefix_family     varchar,         -- null for series-level rules
    observed          double,          -- the day's value of the rule's metric (token hit rate for hit_rate_drop)
    baseline          double,          -- the trailing baseline of that metric
    lost_savings_usd  decimal(38, 15), -- USD: (baseline - observed) x prompt tokens x (input - cache read price)
    message           varchar          -- one line a person can act on
);
