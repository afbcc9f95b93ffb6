-- Empty the price book before it is rebuilt (the rebuild runs in the same transaction).
delete from core.prices;
