-- Mark pending the staged UTC days whose stored results read a pending day: those up to
-- $dependent_days after it (CachemeterSettings.dependent_days: the trailing baselines of
-- marts.prefix_families and the alert rules, rotating-preamble incidents muting later hit-rate drops,
-- the negative-ROI window). Late data for a past day thus rebuilds the days after it as a build from
-- scratch would compute them; a nightly run's new day is the last day, so it adds nothing.
insert into stage.pending_days
select u.day, now() as staged_at
from (select distinct day from core.usage) u
where u.day not in (select day from stage.pending_days)
  and exists (
      select 1 from stage.pending_days p
      where u.day > p.day and u.day <= p.day + to_days($dependent_days)
  );
