-- marts.cost_reconciliation.price_model: catalogue model id the rows were priced with (the model column of a --prices override line).
alter table marts.cost_reconciliation add column if not exists price_model varchar;
