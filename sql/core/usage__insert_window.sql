-- Build core.usage for the partition window [$start, $end) from the staged rows, adding the
-- catalogue model id (registered table model_map: provider, model, price_model).
insert into core.usage
with
staged as (
    select *
    from stage.usage_rows
    where day >= $start and day < $end
),
final as (
    select
        s.request_id, s.ts, s.day, s.source_format, s.provider, s.model, s.tenant, s.app,
        m.price_model,
        s.request_count, s.is_batch, s.service_tier, s.prefix_family,
        s.prompt_tokens, s.uncached_input_tokens, s.cache_read_tokens, s.cache_write_5m_tokens,
        s.cache_write_1h_tokens, s.output_tokens, s.reasoning_tokens, s.source_file, s.source_line
    from staged s
    left join model_map m
        on m.provider is not distinct from s.provider and m.model is not distinct from s.model
)
select * from final;
