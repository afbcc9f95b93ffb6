-- usd(tokens, per_mtok): exact USD for a token count at a price in USD per million tokens,
-- DECIMAL(38,15) (tokens x price x 10^-6 with no floating point).
create or replace macro usd(tokens, per_mtok) as
    cast(tokens::decimal(38, 0) * per_mtok * 0.000001 as decimal(38, 15));
