-- Move each file's accounting between accepted and quarantined by the copies whose status the
-- duplicate rule changed (duplicate_copies): rows_in = accepted + quarantined still holds.
update stage.files as f
set rows_accepted = f.rows_accepted + d.delta,
    rows_quarantined = f.rows_quarantined - d.delta
from (
    select source_file,
           count(*) filter (where winner and not was_accepted) - count(*) filter (where was_accepted and not winner) as delta
    from duplicate_copies
    group by 1
) d
where f.source_file = d.source_file and d.delta <> 0;
