-- Distinct (provider, model) pairs of core.usage in the window [$start, $end), to resolve catalogue ids.
select distinct provider, model
from core.usage
where day >= $start and day < $end;
