-- Forget what the days $days (a list of dates) were replayed from, before they are recorded again or
-- because they no longer have usage rows.
delete from stage.whatif_routing_inputs where day in (select unnest($days::date[]));
