-- Remove the evaluations of the series in the registered relation series_keys (provider, model,
-- tenant, app) before the lifecycle pass writes them again (or because they have no days left).
delete from marts.series_evaluations e
where exists (select 1 from series_keys k
              where e.provider is not distinct from k.provider and e.model is not distinct from k.model
                and e.tenant is not distinct from k.tenant and e.app is not distinct from k.app);
