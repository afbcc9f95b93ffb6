-- plain_decimal(x): a DECIMAL as text without trailing zeros or a trailing point ('5.000000' -> '5',
-- '0.400000' -> '0.4', '10' stays '10'); null stays null. For CSV lines a user pastes (--prices).
create or replace macro plain_decimal(x) as
    case when contains(x::varchar, '.') then rtrim(rtrim(x::varchar, '0'), '.') else x::varchar end;
