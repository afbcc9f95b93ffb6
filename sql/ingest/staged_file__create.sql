-- staged_file: the one file being staged (its name, for ids built from line numbers in file_items).
create or replace temp table staged_file as select $source_file as source_file;
