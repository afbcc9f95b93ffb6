-- staged_items: every normalised record of the batch being staged, under its own file and line: staged_general
-- (staged_items__create.sql) and, when the batch is one file, the fast lane's accepted rows (lane_items) mapped here.
-- A view, not a copy: one large file's lane rows are the whole day (5M rows at 5M requests), and a second temp table
-- of them went over the memory limit, was written to disk and read back (bench/README.md, "staged_items as a view");
-- each reader of the view reads only the lane columns it needs, with no join (a one-file batch's base is 0, so its
-- batch number is its line). Variables (SET VARIABLE, by stage._create_staged_items; a view takes no parameters):
-- staged_lane_file VARCHAR (the one file's name, else null: the lane's rows are in staged_general) and
-- staged_batch_marker VARCHAR (stage.BATCH_MARKER), staged_line_offset BIGINT (an appended part's lines follow its
-- file's staged ones: pipelines/ingest/appends.py; else 0); ids as request_id_staged.sql says.
create or replace temp view staged_items as
select * from staged_general
union all by name
select
    getvariable('staged_lane_file')::varchar as source_file,
    l.source_line + getvariable('staged_line_offset')::bigint as source_line,
    l.source_line as batch_line,
    l.* exclude (source_line, request_id),
    request_id_staged(l.request_id, getvariable('staged_lane_file'), l.source_line + getvariable('staged_line_offset')::bigint,
                      l.source_item,
                      getvariable('staged_batch_marker')) as request_id
from lane_items l
where getvariable('staged_lane_file') is not null;
