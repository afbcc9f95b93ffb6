-- core.quarantine.duplicate_request_id: the request_id a record repeats when it was quarantined as a duplicate (its first copy is the core.usage row with that id), else null; staging stages the record's file again if that first copy goes.
alter table core.quarantine add column if not exists duplicate_request_id varchar;
