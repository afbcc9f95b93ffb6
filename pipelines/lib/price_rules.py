"""Documented pricing rules the catalogue leaves out: batch prices, Claude's 1-hour cache write, DeepSeek's peak days.

genai-prices (the catalogue, ``lib/prices.py``) lists prices as rows, and some of the providers' own rules are missing
from its rows (each found by a break test, each stated by the provider; ``../shared/reference/providers.md`` quotes
them, section 11 "Price multipliers at a glance"):

* **Batch.** genai-prices 0.2.3 lists batch variants from 2026-10-14 only, and none for Claude Opus 4 / 4.1, Sonnet 4
  and the 3.x models, so batch requests before that date (or of those models) were billed at the standard rate: twice
  the bill. Where a model has a catalogue batch price, its ratio to the standard price, class by class, prices the
  days before it (the catalogue dates the listing, not the price); where it has none, the provider's documented
  multiplier does (``batch_rule``).
* **Overrides.** A ``--prices`` row states standard rates; its model's batch, priority and flex rows keep the
  catalogue's ratio to standard (``variant_ratios``), else for batch the documented multiplier, so an override that
  lowers a price lowers its variants too (a break test: flex cost more than standard under one).
* **1-hour cache writes.** A Claude model's cost 2x its input price (``ONE_HOUR_WRITE_TO_INPUT``).
* **DeepSeek's peak hours** apply on weekdays from 2026-08-16 only (``is_weekday_peak``, ``DEEPSEEK_PEAK_SINCE``).
* **Where inference ran.** Anthropic bills US-only inference (``usage.inference_geo`` = ``us``) at 1.1x every token
  price; no catalogue row says so (``GEO_MULTIPLIERS``, applied per request by the SQL macro ``geo_price_factor``).
* **Fast mode.** Anthropic bills a request that ran fast (``usage.speed`` = ``fast``) at a per-model multiple of every
  token price; genai-prices states it in its comments only (``SPEED_MULTIPLIERS``, macro ``speed_price_factor``).

Ratios and multipliers are exact ``Decimal``; derived prices keep 9 decimals (half-even), as ``core.prices`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, time
from decimal import ROUND_HALF_EVEN, Decimal

# the price classes in core.prices' order (USD per million tokens; lib/prices.PRICE_COLUMNS, the --prices header)
PRICE_CLASSES = ("input_per_mtok", "cache_read_per_mtok", "cache_write_5m_per_mtok", "cache_write_1h_per_mtok",
                 "output_per_mtok")
PRICE_QUANTUM = Decimal("0.000000001")  # core.prices is DECIMAL(18, 9): 9 decimals
VARIANTS = ("batch", "priority", "flex")


@dataclass(frozen=True)
class Multiplier:
    """A documented price of a variant: ``factor`` times the standard price of each class in ``classes`` (the other
    classes keep the standard price, as the catalogue's own OpenAI and Gemini batch variants do); ``source``: where
    the provider says so."""

    factor: Decimal
    classes: tuple[str, ...]
    source: str

    def ratios(self) -> tuple[Decimal, ...]:
        """The multiplier as one ratio per price class (``PRICE_CLASSES`` order)."""
        return tuple(self.factor if c in self.classes else Decimal(1) for c in PRICE_CLASSES)


CLAUDE_BATCH = Multiplier(Decimal("0.5"), PRICE_CLASSES, "providers.md 3.3: Message Batches API, 50 % on everything "
                                                         "including cache writes and reads (11: Bedrock Claude as Anthropic)")
# batch multipliers of the models that are not Claude, by cachemeter provider name (providers.md 11; whether a batch
# discount stacks on OpenAI's cached input is not documented, 1.5: the cached rate is kept)
INPUT_OUTPUT_BATCH: dict[str, Multiplier] = {
    "openai": Multiplier(Decimal("0.5"), ("input_per_mtok", "output_per_mtok"),
                         "providers.md 1.5: Batch API, 50 % of standard input and output"),
    "azure": Multiplier(Decimal("0.5"), ("input_per_mtok", "output_per_mtok"), "providers.md 11: Azure OpenAI batch 0.5, as OpenAI"),
    "gemini": Multiplier(Decimal("0.5"), ("input_per_mtok", "output_per_mtok"), "providers.md 4.2: Gemini Batch API, 50 %"),
    "bedrock": Multiplier(Decimal("0.5"), ("input_per_mtok", "output_per_mtok"), "providers.md 11: Bedrock batch 0.5"),
}
CLAUDE_BATCH_PROVIDERS = ("anthropic", "gemini", "bedrock")  # Anthropic's API, Vertex AI, Bedrock (providers.md 11)

# A Claude model's 1-hour cache write costs 2x its input price (Anthropic's pricing page, providers.md 3.3; Bedrock
# uses Anthropic's multipliers, 5.3). genai-prices' inheritance bills a missing one at the 5-minute rate (providers.md
# 13, pitfall 7): Vertex's Claude 4, Bedrock's regional Claude 4 profiles, OpenRouter's Claude models.
ONE_HOUR_WRITE_TO_INPUT = Decimal(2)

# DeepSeek's peak hours, UTC (providers.md 6: "peak = 01:00-04:00 and 06:00-10:00 UTC on weekdays (Chinese public
# holidays are off-peak)", "from 2026-08-16" at 16:00 UTC, so priced from the next UTC day). The catalogue's windows
# carry neither the weekdays nor the start (weekend and earlier requests were billed at peak, a break test); the
# holidays are not modelled (no calendar of them is bundled).
DEEPSEEK_PEAK_WINDOWS = frozenset({(time(1), time(4)), (time(6), time(10))})
DEEPSEEK_PEAK_SINCE = date(2026, 8, 17)


# Where inference ran (core.usage.inference_geo, lower-cased) -> its multiplier of every token price, by provider.
# Anthropic: "inference_geo: us" (US-only inference, Claude Opus 4.6 and later; older models refuse the parameter, so a
# log reporting "us" is such a model) is 1.1x input, output, cache writes and cache reads (providers.md 3.3 "Data
# residency"; platform.claude.com/docs/en/build-with-claude/data-residency). "global", the default, is the list price.
GEO_MULTIPLIERS: dict[tuple[str, str], Multiplier] = {
    ("anthropic", "us"): Multiplier(Decimal("1.1"), PRICE_CLASSES,
                                    "providers.md 3.3: inference_geo US-only = 1.1x every token price"),
}


# The speed a request ran at (core.usage.speed, lower-cased) -> catalogue model -> its multiple of every token price.
# Anthropic fast mode (usage.speed "fast": the speed the request ran and was billed at; the prompt-caching multipliers
# apply on top, so every class scales): Opus 4.6 and 4.7 at $30 / $150 against $5 / $25, 6x (platform.claude.com fast
# mode, "6x standard Opus rates"); the others 2x, as genai-prices 0.2.3's price_comments state them ("Fast mode (`speed:
# fast`) is $X input / $Y output": tests/lib/test_price_rules.py holds these to them). A fast request of a model not
# listed stays unpriced with that reason: its price is not known.
SPEED_MULTIPLIERS: dict[tuple[str, str], dict[str, Decimal]] = {
    ("anthropic", "fast"): {
        "claude-opus-4-6": Decimal(6), "claude-opus-4-7": Decimal(6),  # platform.claude.com fast mode: $30 / $150
        "claude-opus-4-8": Decimal(2), "claude-opus-5": Decimal(2), "claude-opus-5-5": Decimal(2),
        "claude-fable-5-2": Decimal(2), "claude-mythos-5-2": Decimal(2),  # genai-prices price_comments
    },
}


def request_price_macros_sql() -> str:
    """The SQL macros of the prices a request's own report changes (every multiplier scales all classes):
    ``geo_price_factor(provider, geo)``, ``GEO_MULTIPLIERS``' factor (DECIMAL) or null where the list price applies;
    ``speed_price_factor(provider, price_model, speed)``, ``SPEED_MULTIPLIERS``' factor or null; and
    ``speed_priced_apart(provider, speed)``, whether that speed has prices of its own (a null factor then: unknown)."""
    assert all(m.classes == PRICE_CLASSES for m in GEO_MULTIPLIERS.values()), "a geography scales every class"
    whens = " ".join(f"when provider = '{p}' and geo = '{g}' then {m.factor}::decimal(4, 2)"
                     for (p, g), m in GEO_MULTIPLIERS.items())
    speeds = " ".join(f"when provider = '{p}' and speed = '{s}' then case price_model "
                      + " ".join(f"when '{model}' then {factor}::decimal(4, 2)" for model, factor in models.items())
                      + " end" for (p, s), models in SPEED_MULTIPLIERS.items())
    apart = " or ".join(f"(provider = '{p}' and speed = '{s}')" for p, s in SPEED_MULTIPLIERS)
    return ("-- generated from pipelines/lib/price_rules.GEO_MULTIPLIERS and SPEED_MULTIPLIERS\n"
            f"create or replace macro geo_price_factor(provider, geo) as case {whens} end;\n"
            f"create or replace macro speed_price_factor(provider, price_model, speed) as case {speeds} end;\n"
            f"create or replace macro speed_priced_apart(provider, speed) as coalesce({apart}, false);")


def is_claude(model_id: str) -> bool:
    """Whether a catalogue model id names one of Anthropic's Claude models, under any provider."""
    return "claude" in model_id.lower()


def batch_rule(provider: str, model_id: str) -> Multiplier | None:
    """The documented batch multiplier of a provider's model, or None (no batch price is derived)."""
    if is_claude(model_id) and provider in CLAUDE_BATCH_PROVIDERS:
        return CLAUDE_BATCH
    return INPUT_OUTPUT_BATCH.get(provider)


def is_weekday_peak(model_id: str, window: tuple) -> bool:
    """Whether a catalogue time-of-day window of this model is one of DeepSeek's weekday peak windows."""
    return "deepseek" in model_id.lower() and tuple(window) in DEEPSEEK_PEAK_WINDOWS


def ratios_between(standard: tuple, variant: tuple) -> tuple:
    """Class by class, ``variant / standard`` (None where either is missing or the standard price is 0)."""
    return tuple(None if s is None or v is None or s == 0 else v / s for s, v in zip(standard, variant))


def scaled(prices: tuple, ratios: tuple) -> tuple:
    """``prices`` times ``ratios`` class by class, 9 decimals half-even; a class without a ratio keeps its price."""
    return tuple(None if p is None else p if r is None else (p * r).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)
                 for p, r in zip(prices, ratios))
