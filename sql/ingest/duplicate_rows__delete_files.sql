-- Remove the stage.duplicate_rows rows of the batch's files before they are staged again, and of the files whose
-- content a batch file has taken over (registered tables batch_files, batch_predecessors action 'drop'). An appended
-- part's file keeps its rows (batch_files.appended: its new lines are published beside them).
delete from stage.duplicate_rows
where source_file in (select source_file from batch_files where not appended
                      union select old_file from batch_predecessors where action = 'drop');
