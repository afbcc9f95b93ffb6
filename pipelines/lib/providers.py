"""The one list of provider spellings: every name a source may give a provider, and what cachemeter calls it.

Spellings come from each source's docs (an envelope ``provider``, ``source.yaml``, OpenTelemetry
``gen_ai.system`` / ``gen_ai.provider.name``, LiteLLM model prefixes; see ``docs/formats.md``). Python
reads ``PROVIDER_ALIASES`` (price override files, ``lib/prices.normalise_provider``) and the SQL
normalisers call the DuckDB macro ``provider_alias(name)``, generated from the same table by
``alias_macro_sql`` when a warehouse is prepared, so a ``--prices`` row naming ``mistralai`` matches
usage rows normalised to ``mistral``.
"""

from __future__ import annotations

# lower-case spelling -> cachemeter provider name
PROVIDER_ALIASES: dict[str, str] = {
    "openai": "openai",
    "azure": "azure", "azure_openai": "azure", "azure.ai.openai": "azure", "azure.ai.inference": "azure",
    "anthropic": "anthropic",
    "gemini": "gemini", "google": "gemini", "vertex": "gemini", "vertex_ai": "gemini", "gcp.gemini": "gemini",
    "gcp.vertex_ai": "gemini", "gcp.gen_ai": "gemini", "vertex_ai_beta": "gemini",
    "bedrock": "bedrock", "aws": "bedrock", "aws.bedrock": "bedrock", "amazon_bedrock": "bedrock",
    "bedrock_converse": "bedrock",
    "deepseek": "deepseek",
    "xai": "xai", "x-ai": "xai", "x_ai": "xai",
    "mistral": "mistral", "mistral_ai": "mistral", "mistralai": "mistral",
    "cohere": "cohere", "cohere_chat": "cohere",
    "openrouter": "openrouter",
    "groq": "groq",
    "self_hosted": "self_hosted", "self-hosted": "self_hosted", "vllm": "self_hosted", "sglang": "self_hosted",
    "hosted_vllm": "self_hosted",
}


def alias_macro_sql() -> str:
    """``CREATE OR REPLACE MACRO provider_alias(name)``: the provider for a lower-case spelling, else null."""
    cases = "\n".join(f"        when '{alias}' then '{provider}'" for alias, provider in PROVIDER_ALIASES.items())
    return f"create or replace macro provider_alias(name) as\n    case name\n{cases}\n    end;\n"
