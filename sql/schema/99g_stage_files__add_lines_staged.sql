-- stage.files.lines_staged: lines (newlines) of the staged content when known, else null: kept where only a file's appended lines were read (pipelines/ingest/appends.py), so the next append numbers its lines without counting the file's again.
alter table stage.files add column if not exists lines_staged bigint;
