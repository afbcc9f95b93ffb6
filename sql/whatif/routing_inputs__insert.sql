-- Record what the days just replayed were replayed from (registered relation routing_inputs_in: day, inputs).
insert into stage.whatif_routing_inputs by name select day, inputs from routing_inputs_in;
