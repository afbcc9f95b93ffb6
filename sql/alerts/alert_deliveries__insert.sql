-- Record one delivery attempt ($alert_id, $attempt, $status, $http_status, $error).
insert into marts.alert_deliveries values ($alert_id, $attempt, now(), $status, $http_status, $error);
