-- One hash of the whole price book and cache minimums: when it changes, every staged day is repriced.
select md5(coalesce((select string_agg(p::varchar, '|' order by p::varchar) from core.prices p), '')
           || coalesce((select string_agg(m::varchar, '|' order by m::varchar) from core.cache_minimums m), ''));
