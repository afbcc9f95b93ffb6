"""genai-prices' bundled snapshot flattened to ``core.prices`` rows, its variants' ratios, and its model matching.

Imported only when a run needs the catalogue itself: the flattened table and the models resolved before are kept on
disk (``lib/prices.catalogue_table``, ``lib/prices.model_map_table``), so a run that finds them there does not import
genai-prices (0.17 CPU s, a twentieth of a run on a one-line log). Rows, schema and shared constants: ``lib/prices``.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cache

import genai_prices
import pyarrow as pa
from genai_prices import types as gp
from genai_prices.data_snapshot import get_snapshot

from pipelines.lib import price_rules
from pipelines.lib.prices import EPOCH, PRICE_QUANTUM, _derived_rows, _Row, _rule_ratios, _to_table, normalise_model_id
from pipelines.lib.providers import CATALOGUE_TO_PROVIDER, PROVIDER_TO_CATALOGUE


def table() -> pa.Table:
    """Every catalogue price as ``core.prices`` rows (see ``sql/schema/22_core_prices.sql``)."""
    rows: list[_Row] = []
    source = f"genai-prices {genai_prices.__version__} (bundled snapshot)"
    by_id = {provider.id: provider for provider in get_snapshot().providers}
    for provider in by_id.values():
        name = CATALOGUE_TO_PROVIDER.get(provider.id, provider.id)
        own = {model.id for model in provider.models}
        for model in provider.models:
            rows.extend(_model_rows(name, model, source))
        # genai-prices prices a model a provider does not list from its fallback providers, in order
        # (Azure serves OpenAI's models at OpenAI's list prices): made explicit as rows of this provider
        for fallback in getattr(provider, "fallback_model_providers", None) or []:
            for model in by_id[fallback].models if fallback in by_id else []:
                if model.id not in own:
                    own.add(model.id)
                    rows.extend(_model_rows(name, model, f"{source} via {fallback}"))
    return _to_table(rows)


def _model_rows(provider: str, model: gp.ModelInfo, source: str) -> list[_Row]:
    conditionals, starts = _conditionals(model)
    claude = price_rules.is_claude(model.id)
    ratios = _variant_ratios(model)
    rows = []
    for index, conditional in enumerate(conditionals):
        later = [s for s in starts[index + 1:] if s > starts[index]]
        window = _time_window(conditional.constraint)
        peak = price_rules.is_weekday_peak(model.id, window)  # DeepSeek's: weekdays only, and from its first day
        first = max(starts[index], price_rules.DEEPSEEK_PEAK_SINCE) if peak else starts[index]
        base = dict(provider=provider, price_model=model.id, effective_to=min(later) if later else None,
                    utc_time_from=window[0], utc_time_to=window[1], priority=0, price_source=source, weekdays_only=peak)
        standard = _tier_rows(conditional.prices.__dict__, base, "standard", first, index * 1000 + 999, claude)
        rows += standard
        batch_from = [max(starts[index], v.constraint.start_date if isinstance(v.constraint, gp.StartDateConstraint)
                          else EPOCH) for v in model.price_variants or [] if _variant_name(v.when) == "batch"]
        if not batch_from or min(batch_from) > starts[index]:  # no catalogue batch price from this row's first day
            # below the catalogue's own batch rows of the same conditional (precedence ...999 - v_index)
            rows += _derived_rows(standard, "batch", ratios.get("batch") or _rule_ratios(provider, model.id),
                                  index * 1000 + 500)
        for v_index, variant in enumerate(model.price_variants or []):
            name = _variant_name(variant.when)
            if name is None or isinstance(variant.constraint, gp.TimeOfDateConstraint):
                continue
            merged = {**conditional.prices.__dict__,
                      **{k: v for k, v in variant.prices.__dict__.items() if v is not None}}
            v_start = variant.constraint.start_date if isinstance(variant.constraint, gp.StartDateConstraint) else EPOCH
            rows += _tier_rows(merged, base, name, max(starts[index], v_start), index * 1000 + 999 - v_index, claude)
    return rows


def _conditionals(model: gp.ModelInfo) -> tuple[list, list[date]]:
    """A model's conditional prices and the first day of each (``EPOCH`` for one without a start date)."""
    conditionals = model.prices if isinstance(model.prices, list) else [gp.ConditionalPrice(prices=model.prices)]
    return conditionals, [c.constraint.start_date if isinstance(c.constraint, gp.StartDateConstraint) else EPOCH
                          for c in conditionals]


def _variant_ratios(model: gp.ModelInfo) -> dict[str, tuple[tuple, str]]:
    """Per catalogue variant of ``model`` (batch, priority, flex): its base-tier price over the standard price, class
    by class, on the variant's first day (``price_rules.ratios_between``), with a label; {} without variants."""
    conditionals, starts = _conditionals(model)
    found: dict[str, tuple[tuple, str]] = {}
    for variant in model.price_variants or []:
        name = _variant_name(variant.when)
        if name is None or name in found or isinstance(variant.constraint, gp.TimeOfDateConstraint):
            continue
        v_start = variant.constraint.start_date if isinstance(variant.constraint, gp.StartDateConstraint) else EPOCH
        dated = [i for i, c in enumerate(conditionals) if not isinstance(c.constraint, gp.TimeOfDateConstraint)
                 and starts[i] <= v_start] or [0]
        conditional = conditionals[max(dated, key=lambda i: starts[i])]
        merged = {**conditional.prices.__dict__, **{k: v for k, v in variant.prices.__dict__.items() if v is not None}}
        claude = price_rules.is_claude(model.id)
        standard = _tier_rows(conditional.prices.__dict__, _RATIO_BASE, "standard", EPOCH, 0, claude)
        priced = _tier_rows(merged, _RATIO_BASE, name, EPOCH, 0, claude)
        if standard and priced:
            found[name] = (price_rules.ratios_between(standard[0].prices, priced[0].prices),
                           f"{name}: the catalogue's {name} / standard ratio of {model.id}")
    return found


_RATIO_BASE = dict(provider="", price_model="", effective_to=None, utc_time_from=None, utc_time_to=None, priority=0,
                   price_source="")


def _variant_name(when: dict) -> str | None:
    if when == {"processing": "batch"}:
        return "batch"
    tier = when.get("service_tier") if len(when) == 1 else None
    return tier if tier in {"priority", "flex"} else None


def _time_window(constraint) -> tuple:
    if isinstance(constraint, gp.TimeOfDateConstraint):
        return constraint.start_time.replace(tzinfo=None), constraint.end_time.replace(tzinfo=None)
    return None, None


def _tier_rows(prices: dict, base: dict, variant: str, effective_from: date, precedence: int,
               claude: bool = False) -> list[_Row]:
    """One row per long-context tier; each class priced as genai-prices would (parent-class inheritance), but a
    Claude model's missing 1-hour write price (``claude``), which is ``price_rules.ONE_HOUR_WRITE_TO_INPUT`` x input."""
    keys = {"input": prices.get("input_mtok"), "cache_read": prices.get("cache_read_mtok"),
            "cache_write": prices.get("cache_write_mtok"), "cache_write_1h": prices.get("cache_write_1h_mtok"),
            "output": prices.get("output_mtok")}
    if keys["input"] is None and keys["output"] is None:
        return []
    starts = sorted({0} | {t.start for p in keys.values() if isinstance(p, gp.TieredPrices) for t in p.tiers})
    rows = []
    for start in starts:
        at = {k: _price_at(p, start) for k, p in keys.items()}
        inp = at["input"]
        read = at["cache_read"] if at["cache_read"] is not None else inp
        write = at["cache_write"] if at["cache_write"] is not None else inp
        write_1h = (at["cache_write_1h"] if at["cache_write_1h"] is not None
                    else inp * price_rules.ONE_HOUR_WRITE_TO_INPUT if claude and inp is not None else write)
        rows.append(_Row(price_variant=variant, effective_from=effective_from, tier_start_tokens=start,
                         prices=(inp, read, write, write_1h, at["output"]), precedence=precedence, **base))
    return rows


def _price_at(price, tier_start: int) -> Decimal | None:
    """Price of one class for prompts above ``tier_start`` (genai-prices: the tier applies when total > start)."""
    if price is None:
        return None
    applicable = price
    if isinstance(price, gp.TieredPrices):
        applicable = price.base
        for tier in price.tiers:
            if tier.start <= tier_start:
                applicable = tier.price
    # A few catalogue entries carry binary-float noise (0.18000000000000002 for 0.18, all of them
    # third-party resellers); core.prices keeps 9 decimals (USD 1e-9 per million tokens).
    return applicable.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)




@cache
def variant_ratios() -> dict[tuple[str, str], dict[str, tuple[tuple, str]]]:
    """``(provider, price_model) -> {variant: (ratios, label)}`` of every catalogue model with variants
    (``_variant_ratios``), under the provider names ``catalogue_table`` gives them."""
    found: dict[tuple[str, str], dict[str, tuple[tuple, str]]] = {}
    by_id = {provider.id: provider for provider in get_snapshot().providers}
    for provider in by_id.values():
        name = CATALOGUE_TO_PROVIDER.get(provider.id, provider.id)
        models = list(provider.models)
        own = {model.id for model in models}
        for fallback in getattr(provider, "fallback_model_providers", None) or []:
            models += [m for m in (by_id[fallback].models if fallback in by_id else []) if m.id not in own]
        for model in models:
            if model.price_variants and (name, model.id) not in found:
                found[(name, model.id)] = _variant_ratios(model)
    return found




def resolve_price_model(provider: str | None, model: str | None) -> str | None:
    """Catalogue model id for a reported model (after ``normalise_model_id``), else the normalised id lowered.

    Uses genai-prices' own matching rules for the provider, e.g. ``gpt-4o-2024-08-06`` -> ``gpt-4o`` and
    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` -> ``regional.anthropic.claude-sonnet-4-5-20250929-v1:0``.
    """
    model = normalise_model_id(provider, model)
    if model is None:
        return None
    catalogue_provider = PROVIDER_TO_CATALOGUE.get(provider or "", provider)
    if catalogue_provider:
        try:
            found_provider, found_model = get_snapshot().find_provider_model(model, None, catalogue_provider, None)
            if found_provider.id == catalogue_provider:
                return found_model.id
        except LookupError:
            pass
    return model.lower()
