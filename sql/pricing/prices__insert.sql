-- Replace the whole price book with the flattened catalogue and overrides (registered table prices_in).
insert into core.prices select * from prices_in;
