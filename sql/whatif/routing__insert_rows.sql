-- Insert the routing what-if rows computed in Python (registered as routing_rows, the columns of
-- marts.whatif_routing) for the partition window being rebuilt.
insert into marts.whatif_routing by name select * from routing_rows;
