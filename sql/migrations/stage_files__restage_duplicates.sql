-- Bring a warehouse from before stage.duplicate_rows up to date: a file holding quarantined duplicates
-- whose rows that table lacks is staged again on the next run (its mtime is forgotten), so the rows of
-- its duplicates are stored and can be promoted when the kept copy goes. Run by warehouse.prepare;
-- safe to repeat (a file staged since holds its duplicates' rows).
update stage.files
set mtime_ns = -1
where source_file in (
    select q.source_file from core.quarantine q
    anti join stage.duplicate_rows d
        on d.source_file = q.source_file and d.source_line = q.source_line and coalesce(d.source_item, 0) = coalesce(q.source_item, 0)
    where q.duplicate_request_id is not null
);
