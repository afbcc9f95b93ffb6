-- Remove the marts.whatif_routing rows of the days $days (a list of dates) before they are replayed
-- again, or because they no longer have usage rows.
delete from marts.whatif_routing where day in (select unnest($days::date[]));
