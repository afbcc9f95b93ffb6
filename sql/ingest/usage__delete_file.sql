-- Remove every usage row of one file before it is staged again ($source_file).
delete from core.usage where source_file = $source_file;
