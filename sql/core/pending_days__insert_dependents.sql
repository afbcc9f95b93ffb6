-- Mark pending (dependent = true) the staged UTC days whose stored results read a day whose own rows
-- changed: those up to $dependent_days after it (CachemeterSettings.dependent_days: the trailing
-- baselines of marts.prefix_families and the alert rules, the incident rules' previous traffic day and
-- its baseline, rotating-preamble incidents muting later hit-rate drops, the negative-ROI window).
-- Late data for a past day thus rebuilds the days after it as a build from scratch computes them; a
-- nightly run's new day is the last day, so it adds nothing. Days pending only as dependents mark no
-- further days.
insert into stage.pending_days by name
select u.day, now() as staged_at, true as dependent
from (select distinct day from core.usage) u
where u.day not in (select day from stage.pending_days)
  and exists (
      select 1 from stage.pending_days p
      where not p.dependent and u.day > p.day and u.day <= p.day + to_days($dependent_days)
  );
