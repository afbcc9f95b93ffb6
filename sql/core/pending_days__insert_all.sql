-- Mark every staged UTC day pending (all of history is rebuilt: a changed price book, or a run asked to).
insert into stage.pending_days by name
select distinct day, now() as staged_at, false as dependent
from core.usage
where day not in (select day from stage.pending_days where not dependent);
