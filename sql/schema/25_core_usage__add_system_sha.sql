-- core.usage.system_sha: hash of the canonical system prompt. Null when the log carried no request body.
alter table core.usage add column if not exists system_sha varchar;
