-- Mark every staged UTC day pending (all of history is rebuilt: a changed price book, or a run asked to).
insert into stage.pending_days
select distinct day, now() as staged_at
from core.usage
where day not in (select day from stage.pending_days);
