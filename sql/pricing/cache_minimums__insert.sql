-- Load the cache-minimum facts from the CSV shipped with the package ($path).
insert into core.cache_minimums by name
select provider, coalesce(model_prefix, '') as model_prefix, min_prompt_tokens, source, as_of
from read_csv($path, header = true, columns = {
    'provider': 'varchar', 'model_prefix': 'varchar', 'min_prompt_tokens': 'bigint', 'source': 'varchar', 'as_of': 'date'});
