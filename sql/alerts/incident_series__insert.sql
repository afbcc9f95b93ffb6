-- Record what the series just judged were judged from (registered relation incident_series_in).
insert into stage.incident_series by name select * from incident_series_in;
