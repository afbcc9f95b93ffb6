-- stage.files.inode: inode number of the file when staged (a rename keeps it); null for a warehouse from before it and for an entry that could not be read.
alter table stage.files add column if not exists inode bigint;
