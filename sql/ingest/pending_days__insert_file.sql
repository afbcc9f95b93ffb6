-- Mark the days a file's (re-)staging touches as pending: days of its previous rows and of its new rows.
-- (A day pending only as another day's dependent is marked again, as changed itself, so its own
-- dependents follow.)
insert into stage.pending_days by name
select distinct day, now() as staged_at, false as dependent
from (
    select day from core.usage where source_file = $source_file
    union
    select (ts at time zone 'UTC')::date as day from file_items where reason is null
)
where day not in (select day from stage.pending_days where not dependent);
