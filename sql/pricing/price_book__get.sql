-- The version of the price book loaded (stage.price_book.fingerprint), and whether core.prices holds rows.
select (select max(fingerprint) from stage.price_book), exists (select 1 from core.prices)
