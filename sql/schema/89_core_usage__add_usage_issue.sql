-- core.usage.usage_issue: what the row's token classes may miss, though the row is kept and priced as counted: a cache write total reported without its 5m / 1h split (priced at the documented 5-minute default), usage keys no token class maps (named with their numbers, see unmapped_usage); null when none.
alter table core.usage add column if not exists usage_issue varchar;
