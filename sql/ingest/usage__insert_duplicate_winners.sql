-- Promote to core.usage the kept copies of touched ids that were quarantined duplicates (duplicate_copies).
insert into core.usage by name
select * exclude (was_accepted, winner, first) from duplicate_copies where winner and not was_accepted;
