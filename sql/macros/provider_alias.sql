-- provider_alias(name): the provider cachemeter prices a declared provider name as (lower-case input:
-- an envelope "provider", source.yaml provider, an OTel gen_ai.system / gen_ai.provider.name, a LiteLLM
-- model prefix), or null for a name it does not know. Spellings from each source's docs (docs/formats.md).
create or replace macro provider_alias(name) as
    case name
        when 'openai' then 'openai'
        when 'azure' then 'azure' when 'azure_openai' then 'azure' when 'azure.ai.openai' then 'azure'
        when 'azure.ai.inference' then 'azure'
        when 'anthropic' then 'anthropic'
        when 'gemini' then 'gemini' when 'google' then 'gemini' when 'vertex' then 'gemini' when 'vertex_ai' then 'gemini'
        when 'gcp.gemini' then 'gemini' when 'gcp.vertex_ai' then 'gemini' when 'gcp.gen_ai' then 'gemini'
        when 'vertex_ai_beta' then 'gemini'
        when 'bedrock' then 'bedrock' when 'aws' then 'bedrock' when 'aws.bedrock' then 'bedrock'
        when 'amazon_bedrock' then 'bedrock' when 'bedrock_converse' then 'bedrock'
        when 'deepseek' then 'deepseek'
        when 'xai' then 'xai' when 'x-ai' then 'xai' when 'x_ai' then 'xai'
        when 'mistral' then 'mistral' when 'mistral_ai' then 'mistral' when 'mistralai' then 'mistral'
        when 'cohere' then 'cohere' when 'cohere_chat' then 'cohere'
        when 'openrouter' then 'openrouter'
        when 'self_hosted' then 'self_hosted' when 'self-hosted' then 'self_hosted' when 'vllm' then 'self_hosted'
        when 'sglang' then 'self_hosted' when 'hosted_vllm' then 'self_hosted'
    end;
