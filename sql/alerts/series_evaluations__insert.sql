-- Store how each series day was judged (the registered relation evaluations_frame).
insert into marts.series_evaluations by name select * from evaluations_frame;
