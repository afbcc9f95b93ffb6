-- provider_of_model(model): the provider a model id's family names (gpt-/o1../chatgpt -> openai, claude ->
-- anthropic, gemini, grok -> xai, mistral's families, command -> cohere, deepseek), or null. Used only
-- when a record names no provider and its format does not imply one.
create or replace macro provider_of_model(model) as
    case
        when regexp_matches(lower(model), '^(gpt|o[1-9]|chatgpt|text-embedding|codex)') then 'openai'
        when lower(model) like 'claude%' then 'anthropic'
        when lower(model) like 'gemini%' then 'gemini'
        when lower(model) like 'grok%' then 'xai'
        when regexp_matches(lower(model), '^(mistral|magistral|codestral|ministral|devstral|pixtral|open-mistral)') then 'mistral'
        when lower(model) like 'command%' then 'cohere'
        when lower(model) like 'deepseek%' then 'deepseek'
    end;
