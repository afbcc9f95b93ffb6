-- stage.whatif_routing_inputs: what each stored day of marts.whatif_routing was replayed from
-- (grain: day). A day is replayed again only when its inputs (sql/whatif/routing__day_inputs.sql) or
-- the mart's settings differ from these (pipelines/lib/whatif/routing_mart.py).
create table if not exists stage.whatif_routing_inputs (
    day     date,    -- UTC day of marts.whatif_routing
    inputs  varchar  -- digest of the day's replay inputs and the mart's cards and policies
);
