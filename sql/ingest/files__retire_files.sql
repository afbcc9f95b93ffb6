-- Keep the stage.files rows of a file's previous generation under its history name (registered table
-- batch_predecessors, action 'retire'; see usage__retire_files.sql).
update stage.files as q
set source_file = p.history_file
from batch_predecessors p
where p.action = 'retire' and q.source_file = p.old_file;
