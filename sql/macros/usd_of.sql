-- usd_of(v): the JSON value v as an amount of USD, DECIMAL(38, 15), when it is a number, or a string holding a plain
-- decimal number ('12.5'; not '1_000' or '1e3', which DuckDB's cast reads as 1000 and a bill never spells), and at
-- most 10^9 in size (a billion USD for one logged row, a day's usage bucket included); else null, and the caller
-- quarantines the record naming the value. The bound keeps what is derived from a bill inside its columns: a bill of
-- 10^23 USD for two tokens scaled the savings past DECIMAL(38, 15) and failed the day's build on every run (a break
-- test). A JSON number is read by DuckDB's reader as a double: exact to 15 significant digits (its shortest text
-- restores the decimal written), so a cost with more digits than that keeps 15 to 17 of them.
create or replace macro usd_of(v) as
    case when json_type(v) in ('UBIGINT', 'BIGINT', 'DOUBLE')
              or (json_type(v) = 'VARCHAR' and regexp_full_match(v ->> '$', '\s*-?[0-9]+(\.[0-9]*)?\s*'))
         then case when abs(try_cast(v ->> '$' as decimal(38, 15))) <= 1000000000
                   then try_cast(v ->> '$' as decimal(38, 15)) end
    end;
