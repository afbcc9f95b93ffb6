-- stage.duplicate_rows: the normalised rows of records quarantined as duplicate request ids (grain:
-- record; the columns of core.usage, created from it). When the copy that won an id goes (its file
-- changed, was replaced or taken over), the next copy in order is promoted from here to core.usage
-- without reading its file again, so a deleted file's duplicates are not lost. Add any column added to
-- core.usage here too.
create table if not exists stage.duplicate_rows as select * from core.usage limit 0;
