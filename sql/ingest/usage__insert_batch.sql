-- Publish the accepted records of the batch (batch_usage_rows__create_view.sql) to core.usage, with the catalogue id
-- of each reported model (registered table model_map: provider, model, price_model). Duplicate ids are resolved after
-- (duplicate_copies__create.sql).
insert into core.usage by name
select b.*, m.price_model
from batch_usage_rows b
left join model_map m on m.provider is not distinct from b.provider and m.model is not distinct from b.model;
