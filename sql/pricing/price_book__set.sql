-- Record the version of the price book just loaded ($fingerprint).
delete from stage.price_book;
insert into stage.price_book values ($fingerprint);
