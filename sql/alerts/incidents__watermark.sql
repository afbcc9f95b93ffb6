-- The newest request time (UTC) in core.usage: how far the logs have moved (complete days end before it).
select max(ts) from core.usage;
