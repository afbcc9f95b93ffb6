-- Load the cache-minimum facts from the CSV shipped with the package ($path).
insert into core.cache_minimums
select provider, coalesce(model_prefix, ''), min_prompt_tokens, source
from read_csv($path, header = true, columns = {
    'provider': 'varchar', 'model_prefix': 'varchar', 'min_prompt_tokens': 'bigint', 'source': 'varchar'});
