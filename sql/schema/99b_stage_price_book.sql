-- stage.price_book: the version of the price book loaded into core.prices and core.cache_minimums (one row). A run
-- whose catalogue, code, override file and cache-minimum facts make the same version loads nothing again: reading,
-- hashing and rewriting 3,900 price rows was a twentieth of a run on a one-line log (bench/README.md).
create table if not exists stage.price_book (
    fingerprint varchar  -- sha256 of what the book is made of (pipelines/lib/prices.book_fingerprint)
);
