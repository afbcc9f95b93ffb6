-- stage.pending_days.dependent: true when the day is pending only because its stored baselines read a
-- pending day (pending_days__insert_dependents.sql), false when its own rows changed; only the
-- latter mark further days, so a run that dies before rebuilding does not widen the range each retry.
alter table stage.pending_days add column if not exists dependent boolean default 'false';  -- a literal: DuckLake adds columns with literal defaults only
