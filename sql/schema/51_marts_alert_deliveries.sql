-- marts.alert_deliveries: every attempt to post an incident notice to the webhook (grain: incident,
-- notice, attempt). A notice with a 'delivered' or 'dead_letter' row is never posted again; a
-- 'dead_letter' row means the webhook refused its request webhook.max_attempts times. The URL is never stored.
create table if not exists marts.alert_deliveries (
    alert_id      varchar,      -- marts.cache_incidents.incident_key
    attempt       integer,      -- 1, 2, ... across sensor ticks
    attempted_at  timestamptz,  -- UTC
    status        varchar,      -- delivered, failed (tried again) or dead_letter (given up)
    http_status   integer,      -- response status, null when no response
    error         varchar       -- why it failed (never the URL)
);
