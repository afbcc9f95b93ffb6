-- data_quality, two findings per day of [$start, $end):
-- * the log files that fed the day rejected more than $quality_max_quarantine_share of their records into
--   core.quarantine (files with at least $quality_min_records records); observed = quarantined share (streamed
--   snapshots superseded by a fuller one, stage.files.rows_superseded, are not bad data and are left out);
-- * a usage key no token class maps (core.usage.unmapped_usage: pipelines/ingest/formats.yaml usage_keys) carried
--   tokens: one finding per (day, source_format, key), naming the key, the format and its tokens (observed),
--   whatever the amount: those tokens are not priced, so the day's cost may be understated.
insert into marts.cache_alerts by name
with
file_days as (
    select distinct day, source_file from core.usage where day >= $start and day < $end
),
shares as (
    select d.day, sum(f.rows_quarantined - coalesce(f.rows_superseded, 0)) as quarantined, sum(f.rows_in) as records, count(*) as files
    from file_days d
    join stage.files f using (source_file)
    where f.rows_in >= $quality_min_records
    group by d.day
),
final as (
    select
        md5(concat_ws('|', 'data_quality', '', '', '', '', '', day::varchar)) as alert_id,
        day, 'data_quality' as rule, 'warning' as severity,
        null::varchar as provider, null::varchar as model, null::varchar as tenant, null::varchar as app,
        null::varchar as prefix_family,
        quarantined / records as observed, $quality_max_quarantine_share::double as baseline,
        null::decimal(38, 15) as lost_savings_usd, day as first_day,
        format('{:,} of {:,} records ({:.1f}%) in the {} file(s) behind {} were quarantined; see core.quarantine for the reasons',
               quarantined, records, quarantined / records * 100, files, day) as message
    from shares
    where quarantined / records > $quality_max_quarantine_share
),
unmapped as (
    select u.day, u.source_format, e.key, sum(try_cast(e.value::varchar as double)) as tokens,
           sum(u.request_count) as requests, count(*) as rows
    from core.usage u, json_each(u.unmapped_usage) e
    where u.day >= $start and u.day < $end and u.unmapped_usage is not null
    group by all
),
unmapped_final as (
    select
        md5(concat_ws('|', 'data_quality', source_format, key, '', '', '', day::varchar)) as alert_id,
        day, 'data_quality' as rule, 'warning' as severity,
        null::varchar as provider, null::varchar as model, null::varchar as tenant, null::varchar as app,
        null::varchar as prefix_family,
        tokens as observed, null::double as baseline, null::decimal(38, 15) as lost_savings_usd, day as first_day,
        format('{} usage key {} carried {:,} tokens on {:,} row(s) on {} that no token class maps, so they are not priced: '
               || 'map it to a token class or declare it informational in pipelines/ingest/formats.yaml (usage_keys)',
               source_format, key, tokens::hugeint, rows, day) as message
    from unmapped
)
select * from final
union all by name
select * from unmapped_final;
