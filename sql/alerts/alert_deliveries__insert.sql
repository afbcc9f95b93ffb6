-- Record one delivery attempt ($alert_id = incident key, $notice, $attempt, $status, $http_status, $error).
insert into marts.alert_deliveries (alert_id, notice, attempt, attempted_at, status, http_status, error)
values ($alert_id, $notice, $attempt, now(), $status, $http_status, $error);
