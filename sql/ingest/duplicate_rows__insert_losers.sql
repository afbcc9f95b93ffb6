-- Store the rows of the copies of touched ids that are duplicates (duplicate_copies), for a later promotion.
insert into stage.duplicate_rows by name
select * exclude (was_accepted, winner, first) from duplicate_copies where not winner;
