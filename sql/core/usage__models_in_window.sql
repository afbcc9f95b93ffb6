-- Distinct (provider, model) pairs staged in the window [$start, $end), to resolve catalogue ids.
select distinct provider, model
from stage.usage_rows
where day >= $start and day < $end;
