-- Forget what the series in the registered relation series_keys were judged from (they are judged
-- again now, or have no days left).
delete from stage.incident_series s
where exists (select 1 from series_keys k
              where s.provider is not distinct from k.provider and s.model is not distinct from k.model
                and s.tenant is not distinct from k.tenant and s.app is not distinct from k.app);
