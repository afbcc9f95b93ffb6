-- stage.files.device: device number of the file when staged (with inode: which file it is, whatever its name); null for a warehouse from before it and for an entry that could not be read.
alter table stage.files add column if not exists device bigint;
