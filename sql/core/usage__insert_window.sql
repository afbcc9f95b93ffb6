-- Build core.usage for the partition window [$start, $end) from the staged rows, adding the
-- catalogue model id (registered table model_map: provider, model, price_model).
insert into core.usage by name
with
staged as (
    select *
    from stage.usage_rows
    where day >= $start and day < $end
),
final as (
    select s.*, m.price_model
    from staged s
    left join model_map m
        on m.provider is not distinct from s.provider and m.model is not distinct from s.model
)
select * from final;
