-- Mark pending the days of copies whose kept/duplicate status the duplicate rule changed (duplicate_copies).
insert into stage.pending_days by name
select distinct day, now() as staged_at, false as dependent
from duplicate_copies
where winner <> was_accepted and day not in (select day from stage.pending_days where not dependent);
