-- unaccepted_before (temp): stage.unaccepted_files before this batch (source_file, day), read by
-- pending_days__insert_unaccepted_files.sql once the batch is published. Created before the batch's old rows are
-- removed (stage._publish runs it only when such files exist).
create or replace temp table unaccepted_before as
select source_file, day from stage.unaccepted_files;
