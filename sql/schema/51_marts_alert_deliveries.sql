-- marts.alert_deliveries: every attempt to post an alert to the webhook (grain: alert, attempt).
-- An alert with a 'delivered' row is never posted again. The webhook URL is never stored.
create table if not exists marts.alert_deliveries (
    alert_id      varchar,      -- marts.cache_alerts.alert_id
    attempt       integer,      -- 1, 2, ... across sensor ticks
    attempted_at  timestamptz,  -- UTC
    status        varchar,      -- delivered or failed
    http_status   integer,      -- response status, null when no response
    error         varchar       -- why it failed (never the URL)
);
