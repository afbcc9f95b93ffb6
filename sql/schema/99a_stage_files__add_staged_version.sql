-- The version of what staging makes of a file (pipelines/ingest/generations.STAGED_ROWS_VERSION): a change that
-- alters the rows staged from the same bytes bumps it, and the next run reads every file staged by an older version
-- again (a break test: a warehouse upgraded past the change kept the old rows, unlike a fresh build, and no option
-- re-read them). A file gone from the folder keeps its rows.
-- stage.files.staged_version: STAGED_ROWS_VERSION of the run that staged the file; null: staged before versions were recorded (version 1).
alter table stage.files add column if not exists staged_version integer;
