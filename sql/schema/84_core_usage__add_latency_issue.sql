-- core.usage.latency_issue: why a latency or time to first token the row logged was left null (an unparsable time or duration, end before start, first token before start or after the end); null when every logged latency field was used. The row itself is kept: latency is never billed.
alter table core.usage add column if not exists latency_issue varchar;
