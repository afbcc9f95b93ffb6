-- Fast lane: normalise the common records of one JSONL file, plain or gzip ($path), straight from DuckDB's
-- parallel JSON reader into fast_items (accepted = true; read through the file_items view), and mark every
-- other line deferred for the general normaliser (shaped_items__create.sql and the stages after it).
--
-- A line takes the fast lane only when the general normaliser would accept it with these same values: an
-- envelope {"ts", "provider"?, "model"?, "tenant"?, "app"?, "request_id"?, "prefix_hash"?, "response": body}
-- whose body is one of the formats pipelines/lib/formats.yaml marks fast_lane ({{lane_formats}}),
-- told apart by the general ladder in its order (a rung of another format defers the line), every count a
-- plain non-negative integer below 10^12 and every text a plain JSON string, the timestamp in range and the
-- arithmetic closing. Anything else (a malformed line, another format, a container or stream, a logged
-- request body, a reported cost, any value the general checks would reject or that needs its conversions)
-- is deferred, never rejected here: the general normaliser decides it, with its reason. The reader's schema
-- holds only the paths the ladder and the lane's formats read. tests/sql/test_fast_lane.py runs both
-- normalisers over the same lines and requires equal rows.
--
-- Line numbers: DuckDB yields one row per non-blank line (a malformed line is a row of nulls under
-- ignore_errors), kept in file order (preserve_insertion_order), and nothing is filtered out, so fast_items'
-- rowid + 1 is the line number when the file has no blank line; the caller checks that.
-- Parameters: $path (glob characters escaped by logfiles.duckdb_literal_path; for a batch of small files,
-- the temporary file they were copied into), and $provider, $model, $tenant, $app, $default_ts,
-- $deployment_names, $deployment_models, $earliest, $latest as for the general normaliser.
create or replace temp table fast_items as
with
src as (
    select *
    from read_json($path, format = 'newline_delimited', ignore_errors = true, columns = {
        ts: 'JSON', provider: 'JSON', model: 'JSON', tenant: 'JSON', app: 'JSON', request_id: 'JSON', id: 'JSON',
        prefix_hash: 'JSON', reported_cost_usd: 'JSON', custom_id: 'JSON', spend: 'JSON',
        request: 'STRUCT(prompt_cache_key JSON)',
        -- keys that make a line a container or a stream for pipelines/lib/containers.py
        resourceSpans: 'JSON', object: 'JSON', data: 'JSON', starting_at: 'JSON', results: 'JSON',
        stream_events: 'JSON', response_sse: 'JSON', meta: 'JSON', has_more: 'JSON', next_page: 'JSON',
        response: '{{response_struct}}'
    })
),
shaped as (
    select
        s.*,
        coalesce(lower(plain_json_text(s.provider)), lower($provider)) as declared_provider,
        -- the general normaliser's ladder in its order; null = defer
        case
            when s.response is null or s.custom_id is not null or s.spend is not null or s.request is not null
                 or coalesce(s.resourceSpans, s.object, s.data, s.starting_at, s.results, s.stream_events,
                             s.response_sse, s.meta, s.has_more, s.next_page) is not null then null
            when s.response._stream is not null then null
{{ladder}}
        end as source_format
    from src s
),
picked as (
    -- each field's raw JSON value where the declaration reads it for this format
    select
        s.source_format, s.declared_provider, s.ts as env_ts, s.model as env_model, s.tenant as env_tenant,
        s.app as env_app, s.request_id as env_request_id, s.id as env_id, s.prefix_hash, s.reported_cost_usd,
        s.provider is not null and plain_json_text(s.provider) is null as bad_provider,
{{picked}}
    from shaped s
),
valued as (
    select
        p.*,
{{valued}}
        plain_json_text(p.env_model) as s_env_model, plain_json_text(p.env_tenant) as s_env_tenant,
        plain_json_text(p.env_app) as s_env_app, plain_json_text(p.env_request_id) as s_env_request_id,
        plain_json_text(p.env_id) as s_env_id, plain_json_text(p.prefix_hash) as s_prefix_hash,
        plain_json_text(p.env_ts) as s_env_ts
    from picked p
),
resolved as (
    select
        v.*,
        -- every value present is plain: a count is a non-negative integer below 10^12, a text a JSON string
        not v.bad_provider and not v.unsupported and v.reported_cost_usd is null
{{plain_checks}}
            and (v.env_model is null or v.s_env_model is not null)
            and (v.env_tenant is null or v.s_env_tenant is not null)
            and (v.env_app is null or v.s_env_app is not null)
            and (v.env_request_id is null or v.s_env_request_id is not null)
            and (v.env_id is null or v.s_env_id is not null)
            and (v.prefix_hash is null or v.s_prefix_hash is not null)
            as values_plain,
        coalesce(
            case when list_contains($deployment_names::varchar[], coalesce(v.s_env_model, v.t_model, $model))
                 then ($deployment_models::varchar[])[list_position($deployment_names::varchar[], coalesce(v.s_env_model, v.t_model, $model))] end,
            v.s_env_model, v.t_model, $model) as model_reported,
        case v.source_format {{inferred_provider}} end as inferred_provider,
        -- the envelope's time (ISO-8601 text or whole epoch seconds), else the body's, else source.yaml's
        case
            when v.env_ts is not null then coalesce(try_cast(v.s_env_ts as timestamptz),
                                                    try(to_timestamp(plain_count(v.env_ts)::double)))
            when v.v_epoch is not null then try(to_timestamp(plain_count(v.v_epoch)::double))
            when v.v_iso is not null then try_cast(v.t_iso as timestamptz)
            when $default_ts is not null then try_cast($default_ts as timestamptz)
        end as ts,
        -- the conversions the general normaliser makes of other time values are left to it
        (v.env_ts is null or v.s_env_ts is not null or plain_count(v.env_ts) is not null)
            and (v.env_ts is not null or v.v_epoch is null or plain_count(v.v_epoch) is not null) as time_plain
    from valued v
),
counted as (
    select
        r.*,
        coalesce(
            provider_alias(r.declared_provider),
            case
                when r.declared_provider is not null then null
                when r.inferred_provider is not null then r.inferred_provider
                when r.body_upstream like '"%' and r.model_reported like '%/%' then 'openrouter'
                else coalesce(provider_of_model(r.model_reported), {{default_provider}})
            end
        ) as provider,
        r.n_prompt + coalesce(r.n_extra_prompt, 0) as n_prompt_reported,
        coalesce(r.n_read, 0) as n_read_all,
        case when r.v_write_5m is not null or r.v_write_1h is not null
             then coalesce(r.n_write_5m, 0) else coalesce(r.n_write, 0) end as n_write_5m_all,
        coalesce(r.n_write_1h, 0) as n_write_1h_all,
        r.source_format in ({{additive_formats}}) as additive
    from resolved r
),
classed as (
    select
        c.*,
        case when c.additive then c.n_uncached else c.n_prompt_reported - c.n_read_all - c.n_write_5m_all - c.n_write_1h_all end
            as n_uncached_all,
        case when c.additive then c.n_uncached + c.n_read_all + c.n_write_5m_all + c.n_write_1h_all else c.n_prompt_reported end
            as n_prompt_all,
        coalesce(c.n_output, 0) + coalesce(c.n_output_extra, 0)
            + case when {{reasoning_beside_output}} then coalesce(c.n_reasoning, 0) else 0 end as n_output_all
    from counted c
)
select
    c.source_format,
    coalesce(c.source_format is not null and c.values_plain and c.time_plain and c.provider is not null
        and (c.n_prompt is not null or c.additive)
        and (c.n_uncached is not null or not c.additive)
        and (c.n_output is not null or c.source_format in ({{output_optional_formats}}))
        and c.ts is not null and isfinite(c.ts) and c.ts >= timestamptz '2000-01-01 00:00:00+00'
        and c.ts >= $earliest::timestamptz and c.ts <= $latest::timestamptz
        and c.n_uncached_all >= 0
        and not (c.v_write is not null and (c.v_write_5m is not null or c.v_write_1h is not null)
                 and c.n_write_5m_all + c.n_write_1h_all <> c.n_write)
        and not coalesce(c.n_reasoning > c.n_output_all and c.source_format not in ({{reasoning_may_exceed_formats}}), false),
        false) as accepted,
    -- null: the line number's id (the file_items view builds it)
    coalesce(c.s_env_request_id, c.s_env_id, c.t_id) as request_id,
    c.ts,
    c.provider,
    c.model_reported as model,
    coalesce(c.s_env_tenant, $tenant, 'default') as tenant,
    coalesce(c.s_env_app, $app, 'default') as app,
    c.t_tier as service_tier,
    case when c.s_prefix_hash is not null then 'key:' || md5(c.s_prefix_hash)[1:16]
         else 'series:' || md5(concat_ws('|', c.provider, c.model_reported, coalesce(c.s_env_tenant, $tenant, 'default'),
                                         coalesce(c.s_env_app, $app, 'default')))[1:16]
    end as prefix_family,
    c.n_prompt_all as prompt_tokens,
    c.n_uncached_all as uncached_input_tokens,
    c.n_read_all as cache_read_tokens,
    c.n_write_5m_all as cache_write_5m_tokens,
    c.n_write_1h_all as cache_write_1h_tokens,
    c.n_output_all as output_tokens,
    c.n_reasoning as reasoning_tokens,
    1 as request_count,
    c.n_prompt_all as tier_prompt_tokens
from classed c;
