-- marts.cache_incidents: one row per incident (grain: incident), what an on-call person acts on.
-- A series incident (hit_rate_drop, or rotating_preamble when that rule names the cause) opens on the
-- first complete day whose token hit rate falls below the series' baseline by the larger of
-- alerts.hit_rate_drop.min_drop and the noise bound; its baseline is frozen at that day (pre-incident
-- days only) and it resolves when the rate is back within alerts.incidents.recovery_drop of that
-- baseline for alerts.incidents.recovery_days complete days in a row. Other rules' incidents are runs of
-- daily marts.cache_alerts rows, resolved after recovery_days days without one. Rebuilt from the daily
-- evidence on every run (pipelines/lib/incidents.py), so a one-go build and nightly runs agree.
create table if not exists marts.cache_incidents (
    incident_key              varchar,          -- stable id: md5 of rule family | provider | model | tenant | app | prefix_family | opened_day
    rule                      varchar,          -- the cause: rotating_preamble, hit_rate_drop, negative_cache_roi, ... (marts.cache_alerts.rule)
    severity                  varchar,          -- warning or critical (the worst day of the incident; never decays)
    provider                  varchar,          -- provider of the scope (null for rules without one)
    model                     varchar,          -- model as reported (null for rules without one)
    tenant                    varchar,          -- tenant of the scope (null for rules without one)
    app                       varchar,          -- app of the scope (null for rules without one)
    prefix_family             varchar,          -- prefix family of the scope (null for series-level rules)
    opened_day                date,             -- first UTC day the incident was firing
    last_day                  date,             -- last UTC day it was firing
    resolved_day              date,             -- UTC day it resolved (the last confirming day); null while open
    status                    varchar,          -- open or resolved
    baseline_token_hit_rate   double,           -- 0..1, frozen at opened_day (series incidents; else the rule's baseline)
    observed_token_hit_rate   double,           -- 0..1, latest evaluated day (series incidents; else the rule's latest observed value)
    lost_savings_usd          decimal(38, 15),  -- USD, cumulative over the incident's days against the frozen baseline
    message                   varchar,          -- one line a person can act on: since when, lost so far, cause
    divergence_offset_chars   bigint,           -- rotating_preamble: characters of the shared opening before requests diverge (bodies logged)
    divergence_offset_tokens  bigint            -- rotating_preamble: tokens where cache reads now stop (or the char offset / 4)
);
