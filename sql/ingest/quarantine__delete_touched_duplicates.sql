-- Remove the duplicate quarantine rows of the touched ids (touched_ids) before they are written again.
delete from core.quarantine where duplicate_request_id in (select request_id from touched_ids);
