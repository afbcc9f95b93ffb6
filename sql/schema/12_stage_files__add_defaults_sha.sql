-- stage.files.defaults_sha: hash of the source.yaml defaults applied to the file when staged
-- (added after the first release; a change of defaults re-stages the file).
alter table stage.files add column if not exists defaults_sha varchar;
