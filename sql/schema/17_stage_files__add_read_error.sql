-- stage.files.read_error: why the entry could not be read (a file that cannot be opened, a folder that cannot be listed; quarantined as one record at line 0), else null. Such an entry is tried again on every run.
alter table stage.files add column if not exists read_error varchar;
