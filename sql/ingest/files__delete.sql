-- Forget the manifest row of one file before recording it again ($source_file).
delete from stage.files where source_file = $source_file;
