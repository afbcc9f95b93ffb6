-- data_quality: the log files that fed a day of [$start, $end) rejected more than
-- $quality_max_quarantine_share of their records into core.quarantine (files with at least
-- $quality_min_records records). observed = quarantined share of those files' records (streamed snapshots
-- superseded by a fuller one, stage.files.rows_superseded, are not bad data and are left out).
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
)
select * from final;
