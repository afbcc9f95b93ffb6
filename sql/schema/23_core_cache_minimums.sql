-- core.cache_minimums: minimum cacheable prompt length per provider and model prefix (dated facts
-- from reference/providers.md sections 1.4, 3, 5 and 7, each row naming its source). A request
-- below the minimum can never hit, so it is 'ineligible' rather than a miss.
create table if not exists core.cache_minimums (
    provider           varchar,  -- cachemeter provider name
    model_prefix       varchar,  -- matches price_model or model by prefix; '' matches every model of the provider
    min_prompt_tokens  bigint,   -- tokens
    source             varchar   -- where the fact comes from
);
