-- Store the incidents of the lifecycle pass (the registered relation incidents_frame).
insert into marts.cache_incidents by name select * from incidents_frame;
