"""The price book: genai-prices' bundled snapshot flattened to rows, plus user overrides.

Source of every catalogue price: the ``genai-prices`` package (Pydantic's maintained price data),
read from the snapshot bundled with the installed version, never fetched (no network at run time).
Each model's dated prices, time-of-day prices, long-context tiers and price variants (batch,
priority, flex) become rows of ``core.prices`` in USD per million tokens (``Decimal``).

A provider's models that the catalogue lists only under its fallback providers (Azure: OpenAI's
models; Vertex: Anthropic's) get rows under that provider too, as genai-prices resolves them.
Where the catalogue gives no price for a cache class, genai-prices prices it at its parent class
(cache read and cache write at the input rate, a 1-hour write at the cache-write rate); the rows
carry those inherited prices explicitly, so SQL never has to guess. The providers' rules the catalogue
leaves out (batch prices before it lists them, Claude's 1-hour write, DeepSeek's peak days) come from
``lib/price_rules.py``. User overrides (``--prices``) mean exactly what they say: an empty cell is a class
that is not offered, and usage in it leaves the row unpriced; an override states standard rates, and its
model's batch, priority and flex rows keep the catalogue's ratios to them (``price_rules``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from functools import cache
from pathlib import Path

import genai_prices
import pyarrow as pa
from genai_prices import types as gp
from genai_prices.data_snapshot import get_snapshot

from pipelines.lib import price_rules
from pipelines.lib.providers import CATALOGUE_TO_PROVIDER, PROVIDER_ALIASES, PROVIDER_TO_CATALOGUE

# LiteLLM-style routing prefixes ("anthropic/claude-...") that name the provider, not the model; on
# OpenRouter the vendor prefix is part of the catalogue id and stays
_ROUTING_PREFIXES = ("openai/", "azure/", "anthropic/", "gemini/", "google/", "vertex_ai/", "vertex_ai_beta/",
                     "bedrock/", "bedrock_converse/", "aws/", "deepseek/", "xai/", "x-ai/", "mistral/", "mistralai/",
                     "cohere/", "cohere_chat/")

OVERRIDE_COLUMNS = ["provider", "model", "effective_from", "input_per_mtok", "cache_read_per_mtok",
                    "cache_write_5m_per_mtok", "cache_write_1h_per_mtok", "output_per_mtok"]
PRICE_COLUMNS = OVERRIDE_COLUMNS[3:]
# an optional last column: the price variant a row states (standard, the default, batch, priority or flex)
VARIANT_COLUMN = "price_variant"
VARIANTS = ("standard", "batch", "priority", "flex")
EPOCH = date(1970, 1, 1)
PRICE_QUANTUM = Decimal("0.000000001")  # core.prices is DECIMAL(18, 9)

SCHEMA = pa.schema([
    ("provider", pa.string()), ("price_model", pa.string()), ("price_variant", pa.string()),
    ("effective_from", pa.date32()), ("effective_to", pa.date32()),
    ("utc_time_from", pa.time64("us")), ("utc_time_to", pa.time64("us")),
    ("tier_start_tokens", pa.int64()),
    *[(c, pa.decimal128(18, 9)) for c in PRICE_COLUMNS],
    ("priority", pa.int32()), ("precedence", pa.int32()), ("price_source", pa.string()),
    ("weekdays_only", pa.bool_()),
])


class PriceOverrideError(ValueError):
    """A ``--prices`` file that cannot be used; the message names the file, line and fix."""


@dataclass(frozen=True)
class _Row:
    provider: str
    price_model: str
    price_variant: str
    effective_from: date
    effective_to: date | None
    utc_time_from: object
    utc_time_to: object
    tier_start_tokens: int
    prices: tuple
    priority: int
    precedence: int
    price_source: str
    weekdays_only: bool = False


def catalogue_source() -> str:
    """Label of the catalogue in use, e.g. ``'genai-prices 0.2.3 (bundled snapshot)'``."""
    return f"genai-prices {genai_prices.__version__} (bundled snapshot)"


def catalogue_table() -> pa.Table:
    """Every catalogue price as ``core.prices`` rows (see ``sql/schema/22_core_prices.sql``)."""
    rows: list[_Row] = []
    source = catalogue_source()
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


def _rule_ratios(provider: str, model_id: str) -> tuple[tuple, str] | None:
    """The documented batch multiplier of a provider's model as ratios with its label, or None."""
    rule = price_rules.batch_rule(provider, model_id)
    return (rule.ratios(), f"batch: {rule.source}") if rule is not None else None


def _derived_rows(standard: list[_Row], variant: str, ratios: tuple[tuple, str] | None, precedence: int,
                  priority: int | None = None) -> list[_Row]:
    """``variant`` rows derived from ``standard`` rows by ``ratios`` (with their label; None: no rows)."""
    if ratios is None:
        return []
    by_class, label = ratios
    return [replace(row, price_variant=variant, prices=price_rules.scaled(row.prices, by_class), precedence=precedence,
                    priority=row.priority if priority is None else priority, price_source=f"{row.price_source}; {label}")
            for row in standard]


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


def read_overrides(path: Path) -> pa.Table:
    """Parse a ``--prices`` CSV into ``core.prices`` rows (priority 1: overrides win from their date on), with the
    batch, priority and flex rows derived from each standard row (``_override_variants``).

    Columns, exactly: ``provider,model,effective_from,input_per_mtok,cache_read_per_mtok,
    cache_write_5m_per_mtok,cache_write_1h_per_mtok,output_per_mtok`` (USD per million tokens;
    empty cell = not offered), optionally followed by ``price_variant`` (``VARIANTS``; empty = standard). A batch row
    stated for a provider, model and ``effective_from`` replaces the one derived from that standard row. Raises
    ``PriceOverrideError`` naming the file and line; two rows for the same provider, model (as priced: aliases of one
    catalogue model are the same), ``effective_from`` and variant with different prices are a conflict naming both
    lines; an identical repeat is kept once.
    """
    path = Path(path)
    if not path.is_file():
        raise PriceOverrideError(f"{path}: price override file not found")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        columns = [h.strip() for h in header] if header is not None else None
        if columns not in (OVERRIDE_COLUMNS, OVERRIDE_COLUMNS + [VARIANT_COLUMN]):
            raise PriceOverrideError(f"{path}:1: header must be exactly {','.join(OVERRIDE_COLUMNS)} (optionally "
                                     f"followed by ,{VARIANT_COLUMN}); got {header}")
        rows = [_override_row(path, number, record, columns) for number, record in enumerate(reader, start=2)
                if any(cell.strip() for cell in record)]
    kept = _without_repeats(path, rows)
    return _to_table(kept + _override_variants(kept))


def _override_variants(kept: list[_Row]) -> list[_Row]:
    """The batch, priority and flex rows of each standard override row: the catalogue's ratios of that variant to the
    model's standard price (``_variant_ratios``), else for batch the documented multiplier (``price_rules``); none for a
    variant the file states itself for the same provider, model and day."""
    stated = {(row.provider, row.price_model, row.effective_from, row.price_variant) for row in kept}
    catalogue = catalogue_ratios()
    derived = []
    for row in kept:
        if row.price_variant != "standard":
            continue
        ratios = catalogue.get((row.provider, row.price_model), {})
        for variant in price_rules.VARIANTS:
            if (row.provider, row.price_model, row.effective_from, variant) not in stated:
                found = ratios.get(variant) or (_rule_ratios(row.provider, row.price_model) if variant == "batch" else None)
                derived += _derived_rows([row], variant, found, row.precedence)
    return derived


@cache
def catalogue_ratios() -> dict[tuple[str, str], dict[str, tuple[tuple, str]]]:
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


def _without_repeats(path: Path, rows: list[_Row]) -> list[_Row]:
    """``rows`` with identical repeats dropped; raises ``PriceOverrideError`` for conflicting ones."""
    first: dict[tuple, _Row] = {}
    kept = []
    for row in rows:
        key = (row.provider, row.price_model, row.effective_from, row.price_variant)
        earlier = first.setdefault(key, row)
        if earlier is row:
            kept.append(row)
        elif earlier.prices != row.prices:
            raise PriceOverrideError(
                f"{path}:{_line_of(earlier)} and {path}:{_line_of(row)}: conflicting prices for {row.provider} "
                f"{row.price_model}{'' if row.price_variant == 'standard' else ' (' + row.price_variant + ')'} from "
                f"{row.effective_from}; keep one row per provider, model and effective_from")
    return kept


def _line_of(row: _Row) -> str:
    return row.price_source.rsplit(":", 1)[1]


def _override_row(path: Path, number: int, record: list[str], columns: list[str]) -> _Row:
    where = f"{path}:{number}"
    if len(record) != len(columns):
        raise PriceOverrideError(f"{where}: expected {len(columns)} cells, got {len(record)}")
    cells = dict(zip(columns, (c.strip() for c in record)))
    variant = cells.get(VARIANT_COLUMN) or "standard"
    if variant not in VARIANTS:
        raise PriceOverrideError(f"{where}: {VARIANT_COLUMN} {variant!r} must be one of {', '.join(VARIANTS)} (empty: standard)")
    provider = normalise_provider(cells["provider"])
    if not provider or not cells["model"]:
        raise PriceOverrideError(f"{where}: provider and model are required")
    try:
        effective_from = date.fromisoformat(cells["effective_from"]) if cells["effective_from"] else EPOCH
    except ValueError as exc:
        raise PriceOverrideError(f"{where}: effective_from {cells['effective_from']!r} is not a YYYY-MM-DD date") from exc
    prices = []
    for column in PRICE_COLUMNS:
        text = cells[column]
        if not text:
            prices.append(None)
            continue
        try:
            value = Decimal(text)
        except InvalidOperation as exc:
            raise PriceOverrideError(f"{where}: {column} {text!r} is not a number (USD per million tokens)") from exc
        if not value.is_finite() or value < 0 or value >= Decimal(10) ** 9 or value != value.quantize(PRICE_QUANTUM):
            raise PriceOverrideError(
                f"{where}: {column} {text!r} must be a non-negative USD per million tokens below 1e9 with at most 9 decimals")
        prices.append(value)
    return _Row(provider=provider, price_model=resolve_price_model(provider, cells["model"]), price_variant=variant,
                effective_from=effective_from, effective_to=None, utc_time_from=None, utc_time_to=None,
                tier_start_tokens=0, prices=tuple(prices), priority=1, precedence=effective_from.toordinal(),
                price_source=f"override {path.name}:{number}")


def normalise_provider(name: str | None) -> str | None:
    """cachemeter provider name for a user-supplied one (``lib/providers.PROVIDER_ALIASES``: google -> gemini, mistralai -> mistral)."""
    if name is None:
        return None
    lowered = name.strip().lower()
    return PROVIDER_ALIASES.get(lowered, lowered)  # the one list, shared with the SQL macro


def normalise_model_id(provider: str | None, model: str | None) -> str | None:
    """The model id a log names, stripped of how it was routed (the one normalisation step before pricing).

    In order: a Vertex resource path keeps its last segment (``projects/p/locations/l/publishers/google/
    models/gemini-2.5-pro`` -> ``gemini-2.5-pro``; ``models/x`` -> ``x``); a Bedrock ARN keeps the profile
    or model id after its last ``/`` (``arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-...``
    -> ``us.anthropic.claude-...``); a gateway routing prefix naming a provider (``anthropic/``,
    ``vertex_ai/``, ``bedrock/``, ...) is dropped except on OpenRouter, whose catalogue ids keep the
    vendor (``openai/gpt-4.1``); surrounding space goes. Azure deployment names are mapped earlier,
    at ingest, through ``source.yaml`` ``deployments``. Dated snapshots and Bedrock geo prefixes are left
    to genai-prices' own matching in ``resolve_price_model``. ``docs/formats.md`` tabulates examples.
    """
    if model is None:
        return None
    text = model.strip()
    if text.startswith("arn:aws:bedrock:") and "/" in text:
        text = text.rsplit("/", 1)[1]
    elif "/models/" in text:
        text = text.rsplit("/models/", 1)[1]
    elif text.startswith("models/"):
        text = text.removeprefix("models/")
    if provider != "openrouter":
        lowered = text.lower()
        for prefix in _ROUTING_PREFIXES:
            if lowered.startswith(prefix):
                text = text[len(prefix):]
                break
    return text


@cache
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


def model_map_table(pairs: list[tuple[str | None, str | None]]) -> pa.Table:
    """``(provider, model, price_model)`` for each distinct reported pair, for joining in SQL."""
    return pa.table({
        "provider": pa.array([p for p, _ in pairs], pa.string()),
        "model": pa.array([m for _, m in pairs], pa.string()),
        "price_model": pa.array([resolve_price_model(p, m) for p, m in pairs], pa.string()),
    })


def _to_table(rows: list[_Row]) -> pa.Table:
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for row in rows:
        for name in ("provider", "price_model", "price_variant", "effective_from", "effective_to", "utc_time_from",
                     "utc_time_to", "tier_start_tokens", "priority", "precedence", "price_source", "weekdays_only"):
            columns[name].append(getattr(row, name))
        for name, value in zip(PRICE_COLUMNS, row.prices):
            columns[name].append(value)
    return pa.table(columns, schema=SCHEMA)
