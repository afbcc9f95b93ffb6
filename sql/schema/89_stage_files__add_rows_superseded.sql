-- stage.files.rows_superseded: of rows_quarantined, the streamed snapshots (coding-agent transcripts) that a later, fuller snapshot of the same response superseded (staged_items__supersede_snapshots.sql): not bad data, so the data_quality rule leaves them out of the quarantined share.
alter table stage.files add column if not exists rows_superseded bigint default 0;
