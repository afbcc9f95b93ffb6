-- stage.incident_series: what each series' stored lifecycle (its marts.series_evaluations rows and its
-- hit-rate incidents) was computed from (grain: provider, model, tenant, app). The lifecycle pass
-- (pipelines/lib/incidents.py) judges again only the series whose inputs differ from these.
create table if not exists stage.incident_series (
    provider        varchar,  -- cachemeter provider name
    model           varchar,  -- model as reported
    tenant          varchar,  -- owning tenant
    app             varchar,  -- calling application
    inputs          varchar,  -- digest of the series' days, how many are complete, the thresholds
    incidents_json  varchar   -- the series' incidents before causes are attached (JSON list; hashes and figures only)
);
