-- Forget the stored duplicate rows of the touched ids (touched_ids) before they are stored again.
delete from stage.duplicate_rows where request_id in (select request_id from touched_ids);
