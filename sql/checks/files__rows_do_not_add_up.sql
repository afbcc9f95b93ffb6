-- Staged files whose rows_in differs from rows_accepted + rows_quarantined, or whose counts differ
-- from what core.usage and core.quarantine actually hold. Must be 0.
-- violations: files (count); offending: up to 5 of them with every count (rows), for the check's
-- metadata and the CLI's error, so a failure names the file and by how much.
-- The rows of each table are counted per file by one hash aggregate each and joined to the manifest
-- (no per-file correlated subquery).
with
usage_rows as (
    select source_file, count(*) as n from core.usage group by all
),
quarantine_rows as (
    select source_file, count(*) as n from core.quarantine group by all
),
held as (
    select f.source_file, f.rows_in, f.rows_accepted, f.rows_quarantined,
           coalesce(u.n, 0) as usage_rows, coalesce(q.n, 0) as quarantine_rows
    from stage.files f
    left join usage_rows u using (source_file)
    left join quarantine_rows q using (source_file)
),
offending as (
    select * from held
    where rows_in <> rows_accepted + rows_quarantined or usage_rows <> rows_accepted or quarantine_rows <> rows_quarantined
)
select count(*) as violations,
       coalesce(to_json(list(offending order by source_file)[1:5])::varchar, '[]') as offending
from offending;
