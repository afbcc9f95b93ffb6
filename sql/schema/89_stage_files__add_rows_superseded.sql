-- stage.files.rows_superseded: of rows_quarantined, the streamed snapshots a later, fuller snapshot of the same
-- response superseded (coding-agent transcripts: staged_items__supersede_snapshots.sql). Not bad data: the
-- data_quality rule leaves them out of the quarantined share.
alter table stage.files add column if not exists rows_superseded bigint default 0;
