-- The incident notices due, oldest first, with the attempts already made ($window_days; $refused: the HTTP
-- statuses that refuse a request, lib/webhook.py REFUSED_REQUEST): an incident's 'opened'
-- (only incidents opened within $window_days days of the newest staged day, or still open and firing
-- within them: enabling delivery, or building a new warehouse from old logs, does not post the history),
-- its 'resolved' once resolved and its opening delivered or due in the same pass (an incident that opened
-- and resolved while the webhook was down is posted as both, in that order; lib/webhook.py holds the
-- resolved back when its opening fails in the pass), and a 'retracted' for an incident delivered but no
-- longer found. A notice delivered or dead-lettered is done; one tried and failed stays due until it is (however
-- long the webhook is down: only a notice the webhook refuses as a request is dead-lettered, lib/webhook.py). The
-- newest day is core.usage's, not the incidents': a build of many day ranges delivers after each, and its first
-- ranges are old. An incident that late data opens again after its resolution was delivered gets 'reopened:<n>'
-- (n = 2 for the first time, its cycle), and resolving again 'resolved:<n>': the receiver's last word is made to
-- follow the warehouse (before, it kept the first resolution while the incident was open for days: a break test).
with
newest as (select max(day) as day from core.usage),
last_delivered as (  -- per incident: the last notice the webhook took, and how many re-openings it took
    select alert_id as incident_key, arg_max(notice, attempted_at) as notice,
           count(*) filter (where starts_with(notice, 'reopened:')) as reopenings
    from marts.alert_deliveries where status = 'delivered' group by alert_id
),
delivered as (
    select alert_id as incident_key, notice from marts.alert_deliveries where status = 'delivered'
),
done as (
    select alert_id as incident_key, notice from marts.alert_deliveries where status in ('delivered', 'dead_letter')
),
-- a notice tried before stays due until delivered or dead-lettered, however far the newest day has moved since
attempted as (
    select distinct alert_id as incident_key, notice from marts.alert_deliveries
),
due as (
    select i.*, 'opened' as notice, 1 as notice_order
    from marts.cache_incidents i, newest
    where i.opened_day >= newest.day - to_days($window_days)
       or (i.status = 'open' and i.last_day >= newest.day - to_days($window_days))
       or exists (select 1 from attempted a where a.incident_key = i.incident_key and a.notice = 'opened')
    union all by name
    select i.*, 'resolved' as notice, 2 as notice_order
    from marts.cache_incidents i, newest
    where i.status = 'resolved'
      and (exists (select 1 from delivered v where v.incident_key = i.incident_key and v.notice = 'opened')
           or ((i.opened_day >= newest.day - to_days($window_days)
                or exists (select 1 from attempted a where a.incident_key = i.incident_key and a.notice = 'opened'))
               and not exists (select 1 from done x where x.incident_key = i.incident_key and x.notice = 'opened')))
    union all by name
    -- opened again after a delivered resolution: due while open, and once tried, until delivered (a cycle that
    -- opened and resolved while the webhook was down is posted as both, in that order, as a first cycle is)
    select i.*, 'reopened:' || (l.reopenings + 2) as notice, 4 as notice_order
    from marts.cache_incidents i join last_delivered l on l.incident_key = i.incident_key
    where (l.notice = 'resolved' or starts_with(l.notice, 'resolved:'))
      and (i.status = 'open'
           or exists (select 1 from attempted a
                      where a.incident_key = i.incident_key and a.notice = 'reopened:' || (l.reopenings + 2)))
    union all by name
    select i.*, 'resolved:' || split_part(l.notice, ':', 2) as notice, 5 as notice_order
    from marts.cache_incidents i join last_delivered l on l.incident_key = i.incident_key
    where i.status = 'resolved' and starts_with(l.notice, 'reopened:')
    union all by name
    select i.*, 'resolved:' || (l.reopenings + 2) as notice, 5 as notice_order
    from marts.cache_incidents i join last_delivered l on l.incident_key = i.incident_key
    where i.status = 'resolved' and (l.notice = 'resolved' or starts_with(l.notice, 'resolved:'))
      and exists (select 1 from attempted a
                  where a.incident_key = i.incident_key and a.notice = 'reopened:' || (l.reopenings + 2))
    union all by name
    select e.incident_key, e.day as last_day, 'retracted' as notice, 3 as notice_order,
           'an incident delivered earlier is no longer found after a rebuild (late or edited data)' as message
    from marts.cache_incident_events e
    where e.event = 'retracted'
      and e.incident_key not in (select incident_key from marts.cache_incidents)
      and exists (select 1 from delivered v where v.incident_key = e.incident_key and v.notice = 'opened')
)
select
    d.incident_key, d.notice, d.rule, d.severity, d.provider, d.model, d.tenant, d.app, d.prefix_family,
    d.opened_day, d.last_day, d.resolved_day, d.status, d.baseline_token_hit_rate, d.observed_token_hit_rate,
    d.lost_savings_usd, d.message,
    coalesce((select max(a.attempt) from marts.alert_deliveries a
              where a.alert_id = d.incident_key and a.notice = d.notice), 0) as attempts,
    -- the attempts the webhook answered by refusing the request itself (lib/webhook.py REFUSED_REQUEST): only
    -- these count toward max_attempts (an outage's failures before them do not)
    (select count(*) from marts.alert_deliveries a
     where a.alert_id = d.incident_key and a.notice = d.notice and list_contains($refused::integer[], a.http_status))
        as refusals
from due d
where not exists (select 1 from done x where x.incident_key = d.incident_key and x.notice = d.notice)
order by coalesce(d.resolved_day, d.opened_day, d.last_day), d.incident_key, d.notice_order;
