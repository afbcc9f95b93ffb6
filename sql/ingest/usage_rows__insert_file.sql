-- Publish the accepted records of one file ($source_file) to stage.usage_rows.
insert into stage.usage_rows
select
    request_id,
    ts,
    (ts at time zone 'UTC')::date as day,
    source_format,
    provider,
    model,
    tenant,
    app,
    1 as request_count,
    coalesce(service_tier = 'batch', false) as is_batch,
    service_tier,
    prefix_family,
    prompt_tokens,
    uncached_input_tokens,
    cache_read_tokens,
    cache_write_5m_tokens,
    cache_write_1h_tokens,
    output_tokens,
    reasoning_tokens,
    $source_file as source_file,
    source_line
from file_rows
where reason is null;
