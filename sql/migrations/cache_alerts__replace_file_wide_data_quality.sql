-- Bring a warehouse whose data_quality alerts were judged file-wide (every day a file covered shared its
-- quarantined share, so bad lines written today alerted on each of those days) up to date: every day holding
-- such an alert (its message, "in the N file(s) behind <day>", is the old rule's) is marked pending, so the next
-- run judges it again with each bad line on its own day (cache_alerts__insert_data_quality.sql). Run by
-- warehouse.prepare; safe to repeat (a rebuilt day's alert reads "of <day> were quarantined, in N file(s)").
insert into stage.pending_days by name
select distinct a.day, now() as staged_at, false as dependent
from marts.cache_alerts a
where a.rule = 'data_quality' and a.message like '% file(s) behind %'
  and a.day not in (select day from stage.pending_days where not dependent);
