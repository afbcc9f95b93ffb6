-- Record device, inode and head of unchanged files staged before those were recorded (registered
-- table identity_in: source_file, device, inode, head_bytes, head_sha).
update stage.files as f
set device = i.device, inode = i.inode, head_bytes = i.head_bytes, head_sha = i.head_sha
from identity_in as i
where f.source_file = i.source_file;
