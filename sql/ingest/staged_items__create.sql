-- staged_general: the normalised records of the batch being staged that the view staged_items
-- (staged_items__create_view.sql) does not read from the lane itself, under their own file and line: the general
-- normaliser's rows (file_rows, accepted or rejected), and the fast lane's accepted ones (lane_items) when the batch
-- has many files (the variable staged_lane_file is null; one large file's lane rows stay in fast_items, read through
-- the view). The batch numbers its records as one sequence (file f's line n is batch_line base + n; registered table
-- batch_files: source_file, base, span, ...) so many small files are normalised in one pass; this maps each back to
-- (source_file, source_line), ids as request_id_staged.sql says; an appended part's lines (batch_files.appended,
-- pipelines/ingest/appends.py) follow its file's staged ones (batch_files.line_offset). A table: streamed snapshots, which only the general
-- normaliser reads (formats.py refuses a fast_lane format with the snapshots option), are superseded by an update
-- (staged_items__supersede_snapshots.sql). Variables (stage._create_staged_items): staged_lane_file,
-- staged_batch_marker (what the normaliser was given as $source_file); lane_items reads staged_lane_offset.
create or replace temp table staged_general as
with items as (
    select * from file_rows
    union all by name
    select * from lane_items where getvariable('staged_lane_file') is null
)
select
    b.source_file,
    i.source_line - b.base + b.line_offset as source_line,
    i.source_line as batch_line,
    i.* exclude (source_line, request_id),
    request_id_staged(i.request_id, b.source_file, i.source_line - b.base + b.line_offset, i.source_item,
                      getvariable('staged_batch_marker')) as request_id
from items i
-- the file whose range [base, base + span) holds the number (the ranges do not overlap). A range join, not an
-- ASOF join: with one file (a large file is a batch alone) DuckDB loops over its one row, where an ASOF join
-- sorted every record (measured on a 5M-record file: 3.2 s against 18.5 s; bench/README.md)
join batch_files b on i.source_line >= b.base and i.source_line < b.base + b.span;
