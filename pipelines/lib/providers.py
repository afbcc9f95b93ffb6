"""The one provider table: every provider cachemeter knows, the names sources give it, and its catalogue id.

Spellings come from each source's docs (an envelope ``provider``, ``source.yaml``, OpenTelemetry
``gen_ai.system`` / ``gen_ai.provider.name``, LiteLLM model prefixes; see ``docs/formats.md``); catalogue
ids are genai-prices' provider ids (``prices/providers/<id>.yml``). Everything else is derived from
``PROVIDERS``: ``PROVIDER_ALIASES`` (price override files, ``lib/prices.normalise_provider``),
``PROVIDER_TO_CATALOGUE`` / ``CATALOGUE_TO_PROVIDER`` (``lib/prices``: pricing and the oracle test) and the
DuckDB macro ``provider_alias(name)`` the SQL normalisers call (``alias_macro_sql``, generated when a
warehouse is prepared), so a ``--prices`` row naming ``mistralai`` matches usage rows normalised to
``mistral``.

A provider with no catalogue id (``catalogue=None``) is accepted and its rows stay unpriced with the
reason (``core.usage_costs.unpriced_reason``) until a ``--prices`` row covers them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    """``name``: what cachemeter calls it (``core.usage.provider``); ``catalogue``: genai-prices provider
    id, or None; ``aliases``: the other lower-case spellings sources use for it."""

    name: str
    catalogue: str | None
    aliases: tuple[str, ...] = ()


PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", "openai"),
    Provider("azure", "azure", ("azure_openai", "azure.ai.openai", "azure.ai.inference")),
    Provider("anthropic", "anthropic"),
    Provider("gemini", "google", ("google", "vertex", "vertex_ai", "gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai",
                                  "vertex_ai_beta")),
    Provider("bedrock", "aws", ("aws", "aws.bedrock", "amazon_bedrock", "bedrock_converse")),
    Provider("deepseek", "deepseek"),
    Provider("xai", "x-ai", ("x-ai", "x_ai")),
    Provider("mistral", "mistral", ("mistral_ai", "mistralai")),
    Provider("cohere", "cohere", ("cohere_chat",)),
    Provider("openrouter", "openrouter"),
    Provider("groq", "groq"),
    # OpenAI-compatible providers genai-prices prices (docs/formats.md, "OpenAI-compatible providers")
    Provider("moonshotai", "moonshotai", ("moonshot", "moonshot_ai", "kimi")),
    Provider("zhipuai", "zhipuai", ("zhipu", "bigmodel")),
    Provider("zai", "zai", ("z.ai", "z_ai")),
    Provider("together", "together", ("together_ai", "togetherai")),
    Provider("fireworks", "fireworks", ("fireworks_ai", "fireworks-ai")),
    Provider("perplexity", "perplexity"),
    Provider("cerebras", "cerebras"),
    Provider("minimax", "minimax"),
    Provider("novita", "novita", ("novita_ai",)),
    Provider("ovhcloud", "ovhcloud"),
    # OpenAI-compatible, not in the catalogue: accepted, unpriced with the reason until --prices covers it
    Provider("dashscope", None, ("qwen", "alibaba", "alibaba_cloud", "aliyun")),
    Provider("self_hosted", None, ("self-hosted", "vllm", "sglang", "hosted_vllm")),
)

# lower-case spelling -> cachemeter provider name
PROVIDER_ALIASES: dict[str, str] = {alias: p.name for p in PROVIDERS for alias in (p.name, *p.aliases)}
# cachemeter provider name -> genai-prices provider id (and back)
PROVIDER_TO_CATALOGUE: dict[str, str] = {p.name: p.catalogue for p in PROVIDERS if p.catalogue}
CATALOGUE_TO_PROVIDER: dict[str, str] = {v: k for k, v in PROVIDER_TO_CATALOGUE.items()}


def alias_macro_sql() -> str:
    """``CREATE OR REPLACE MACRO provider_alias(name)``: the provider for a lower-case spelling, else null."""
    cases = "\n".join(f"        when '{alias}' then '{provider}'" for alias, provider in PROVIDER_ALIASES.items())
    return f"create or replace macro provider_alias(name) as\n    case name\n{cases}\n    end;\n"
