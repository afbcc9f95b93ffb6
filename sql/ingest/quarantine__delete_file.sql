-- Remove the quarantined records of one file before it is staged again ($source_file).
delete from core.quarantine where source_file = $source_file;
