-- Remove from core.usage the copies of touched ids that the duplicate rule no longer keeps (duplicate_copies).
delete from core.usage u
using duplicate_copies c
where c.was_accepted and not c.winner and u.request_id = c.request_id and u.source_file = c.source_file
  and u.source_line = c.source_line and coalesce(u.source_item, 0) = coalesce(c.source_item, 0);
