-- Remove every staged usage row of one file before it is staged again ($source_file).
delete from stage.usage_rows where source_file = $source_file;
