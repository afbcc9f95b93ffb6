-- marts.series_evaluations: how each series' day was judged by the hit-rate incident rule (grain:
-- day, provider, model, tenant, app). status: evaluated, not_evaluated (too few requests even pooled
-- over alerts.incidents.pool_max_days days, or too little history) or held (the day is not complete:
-- the logs have not moved past it by alerts.incidents.complete_lag_hours). Nothing is skipped silently.
create table if not exists marts.series_evaluations (
    day                   date,      -- UTC day
    provider              varchar,   -- cachemeter provider name
    model                 varchar,   -- model as reported
    tenant                varchar,   -- owning tenant
    app                   varchar,   -- calling application
    status                varchar,   -- evaluated, not_evaluated or held
    reason                varchar,   -- why not evaluated or held (null when evaluated)
    pooled_days           integer,   -- days pooled for the observation (1 unless the series is low-volume)
    requests              bigint,    -- requests behind the observation (pooled)
    observed              double,    -- 0..1 token hit rate of the observation
    baseline              double,    -- 0..1 the baseline compared against (frozen while an incident is open)
    threshold             double,    -- 0..1 the drop that fires: max(min_drop, confidence_z x noise)
    incident_key          varchar    -- the open incident this day belongs to, else null
);
