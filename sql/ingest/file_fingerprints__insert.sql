-- Add the fingerprints computed in Python for one chunk (registered table fingerprints_in).
insert into file_fingerprints by name select * from fingerprints_in;
