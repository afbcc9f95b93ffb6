-- Re-resolve the catalogue id (price_model) of the window's rows [$start, $end) from the registered
-- table model_map (provider, model, price_model). Staging already set it with the same resolver, so
-- this touches rows only when the catalogue changed (a new genai-prices snapshot) or the warehouse came
-- from before staging set it: a normal night updates no row (0.12 s at 5M rows: one scan of four columns).
update core.usage u
set price_model = m.price_model
from model_map m
where u.day >= $start and u.day < $end
    and m.provider is not distinct from u.provider
    and m.model is not distinct from u.model
    and u.price_model is distinct from m.price_model;
