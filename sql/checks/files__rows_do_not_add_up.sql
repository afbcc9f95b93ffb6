-- Staged files whose rows_in differs from rows_accepted + rows_quarantined, or whose counts differ
-- from what core.usage and core.quarantine actually hold. Must be 0.
with
held as (
    select f.source_file, f.rows_in, f.rows_accepted, f.rows_quarantined,
           (select count(*) from core.usage u where u.source_file = f.source_file) as usage_rows,
           (select count(*) from core.quarantine q where q.source_file = f.source_file) as quarantine_rows
    from stage.files f
)
select count(*) as violations
from held
where rows_in <> rows_accepted + rows_quarantined or usage_rows <> rows_accepted or quarantine_rows <> rows_quarantined;
