-- data_quality, two findings per day of [$start, $end):
-- * the day's records were quarantined into core.quarantine beyond $quality_max_quarantine_share (days of at least
--   $quality_min_records records); observed = quarantined share. A quarantined line has no trusted time, so it
--   belongs to the day of the nearest accepted line before it in its file (log files are written in time order),
--   else the nearest after it (lines that open a file): a day's share no longer moves as the live file behind it
--   grows, and bad lines written today do not raise an alert on every day the file covers or on an old day a
--   mistimed line names (a line of several records: on its last record's day). A duplicate request id's copy parsed,
--   so it counts on its own day, and a bad record on its line on its first copy's day. A file none of whose
--   lines was accepted (a provider's new format, a stray file) has no such line: its bad lines count on the newest
--   day of core.usage on or before the day the file was last written, else on the first (stage.unaccepted_files);
--   the days this place leaves and reaches as logs arrive are rebuilt (pending_days__insert_unaccepted_files.sql).
--   Before, such a file raised nothing. Records of a day = its accepted rows + the quarantined lines placed on it. Streamed
--   snapshots superseded by a fuller one (staged_items__supersede_snapshots.sql) are not bad data and are left out,
--   as are whole-file problems (line 0: no line to place);
-- * a usage key no token class maps (core.usage.unmapped_usage: pipelines/ingest/formats.yaml usage_keys) carried
--   tokens: one finding per (day, source_format, key), naming the key, the format and its tokens (observed),
--   whatever the amount: those tokens are not priced, so the day's cost may be understated.
insert into marts.cache_alerts by name
with
accepted as (
    select day, count(*) as rows from core.usage where day >= $start and day < $end group by day
),
bad as (
    select q.source_file, q.source_line, coalesce(q.source_item, 0) as source_item,
           q.duplicate_request_id is not null as duplicate
    from core.quarantine q
    where q.source_line > 0 and not starts_with(q.reason, 'superseded streaming snapshot')
),
bad_file_lines as (  -- the accepted lines of the files that hold bad ones, whatever their day: a line of several
    -- records (an OTLP batch of spans) places on the day of its last record, whatever order a join meets them in
    select source_file, source_line, arg_max(day, coalesce(source_item, 0)) as day
    from core.usage where source_file in (select source_file from bad) group by all
),
duplicate_copy_days as (  -- a duplicate request id's copy has a trusted time: its own day (stage.duplicate_rows)
    select source_file, source_line, coalesce(source_item, 0) as source_item, any_value(day) as day
    from stage.duplicate_rows group by all
),
duplicate_days as (  -- a bad record on a line with duplicate copies: the day of its first copy
    select source_file, source_line, arg_min(day, source_item) as day from duplicate_copy_days group by all
),
placed as (  -- (a break test: two duplicate copies of different days on one line both counted on either's day,
    -- as the table's row order fell)
    select b.source_file, coalesce(c.day, d.day, before.day, after.day, unaccepted.day) as day
    from bad b
    left join duplicate_copy_days c
        on b.duplicate and c.source_file = b.source_file and c.source_line = b.source_line
        and c.source_item = b.source_item
    left join duplicate_days d on d.source_file = b.source_file and d.source_line = b.source_line
    left join stage.unaccepted_files unaccepted on unaccepted.source_file = b.source_file
    asof left join bad_file_lines before on b.source_file = before.source_file and b.source_line >= before.source_line
    asof left join bad_file_lines after on b.source_file = after.source_file and b.source_line <= after.source_line
),
shares as (
    select a.day, count(p.day) as quarantined, a.rows + count(p.day) as records, count(distinct p.source_file) as files
    from accepted a
    left join placed p on p.day = a.day
    group by a.day, a.rows
    having a.rows + count(p.day) >= $quality_min_records
),
final as (
    select
        md5(concat_ws('|', 'data_quality', '', '', '', '', '', day::varchar)) as alert_id,
        day, 'data_quality' as rule, 'warning' as severity,
        null::varchar as provider, null::varchar as model, null::varchar as tenant, null::varchar as app,
        null::varchar as prefix_family,
        quarantined / records as observed, $quality_max_quarantine_share::double as baseline,
        null::decimal(38, 15) as lost_savings_usd, day as first_day,
        format('{:,} of {:,} records ({:.1f}%) of {} were quarantined, in {} file(s); see core.quarantine for the reasons',
               quarantined, records, quarantined / records * 100, day, files) as message
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
