-- core.usage.tools_sha: hash of the canonical (sorted-key JSON) tools list. Null when the log carried no request body.
alter table core.usage add column if not exists tools_sha varchar;
