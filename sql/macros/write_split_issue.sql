-- write_split_issue(reports_split, w5, w1, write): the core.usage.usage_issue text for a cache write total
-- whose 5m / 1h split (a format with the split: pipelines/ingest/formats.yaml write_1h) is missing or zero,
-- priced at the 5-minute default by cache_write_5m_of; null otherwise. Both readers call it.
create or replace macro write_split_issue(reports_split, w5, w1, write) as
    case when coalesce(reports_split, false) and coalesce(write, 0) > 0 and coalesce(w5, 0) + coalesce(w1, 0) = 0
         then 'cache write of ' || write || ' tokens without its 5m / 1h split ('
              || case when w5 is null and w1 is null then 'missing' else 'both zero' end
              || '): priced at the documented default TTL, 5 minutes' end;
