-- stage.usage_rows.tools_sha: hash of the canonical (sorted-key JSON) tools list. Null when the log carried no request body.
alter table stage.usage_rows add column if not exists tools_sha varchar;
