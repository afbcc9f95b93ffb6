-- stage.usage_rows.system_sha: hash of the canonical system prompt. Null when the log carried no request body.
alter table stage.usage_rows add column if not exists system_sha varchar;
