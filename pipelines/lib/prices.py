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
import hashlib
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

import pyarrow as pa

from pipelines.lib import price_rules
from pipelines.lib.providers import CATALOGUE_TO_PROVIDER, PROVIDER_ALIASES, PROVIDER_TO_CATALOGUE  # noqa: F401 (re-exported)

# LiteLLM-style routing prefixes ("anthropic/claude-...") that name the provider, not the model; on
# OpenRouter the vendor prefix is part of the catalogue id and stays
_ROUTING_PREFIXES = ("openai/", "azure/", "anthropic/", "gemini/", "google/", "vertex_ai/", "vertex_ai_beta/",
                     "bedrock/", "bedrock_converse/", "aws/", "deepseek/", "xai/", "x-ai/", "mistral/", "mistralai/",
                     "cohere/", "cohere_chat/")

OVERRIDE_COLUMNS = ["provider", "model", "effective_from", *price_rules.PRICE_CLASSES]
PRICE_COLUMNS = OVERRIDE_COLUMNS[3:]
# an optional last column: the price variant a row states (standard, the default, batch, priority or flex)
VARIANT_COLUMN = "price_variant"
VARIANTS = ("standard", "batch", "priority", "flex")
EPOCH = date(1970, 1, 1)
PRICE_QUANTUM = price_rules.PRICE_QUANTUM  # core.prices is DECIMAL(18, 9)

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


def catalogue_version() -> str:
    """The installed genai-prices version, from its package metadata (importing it costs 0.17 CPU s)."""
    from importlib.metadata import version

    return version("genai-prices")


def catalogue_source() -> str:
    """Label of the catalogue in use, e.g. ``'genai-prices 0.2.3 (bundled snapshot)'``."""
    return f"genai-prices {catalogue_version()} (bundled snapshot)"


def _cache_key() -> list[str]:
    """What the catalogue's rows and model matching depend on: its version and this code (``disk_cache``)."""
    from pipelines.lib import disk_cache, providers

    return [catalogue_version(), *disk_cache.source_texts(__file__, price_rules.__file__, providers.__file__,
                                                          Path(__file__).with_name("catalogue.py"))]


def book_fingerprint(overrides: Path | None, minimums: Path) -> str:
    """A version of the price book: what the catalogue's rows depend on (``_cache_key``), the override file's bytes and
    the cache-minimum facts' (``stage.price_book``). Raises ``OSError`` when a file cannot be read."""
    parts = [*_cache_key(), minimums.read_text(encoding="utf-8")]
    if overrides is not None:
        parts += [str(overrides), Path(overrides).read_bytes().decode("utf-8", "surrogateescape")]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def catalogue_table() -> pa.Table:
    """Every catalogue price as ``core.prices`` rows (see ``sql/schema/22_core_prices.sql``; ``lib/catalogue.table``).

    The same for one genai-prices version and one version of this code, so kept on disk per both (``disk_cache``): a
    run then neither imports genai-prices nor flattens it (0.3 CPU s of a run on a one-line log)."""
    from pipelines.lib import disk_cache

    def build() -> pa.Table:
        from pipelines.lib import catalogue

        return catalogue.table()

    return disk_cache.arrow_table("catalogue-prices", _cache_key(), build)


def catalogue_ratios() -> dict[tuple[str, str], dict[str, tuple[tuple, str]]]:
    """``(provider, price_model) -> {variant: (ratios, label)}`` of every catalogue model with variants
    (``lib/catalogue.variant_ratios``)."""
    from pipelines.lib import catalogue

    return catalogue.variant_ratios()


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
    """Catalogue model id for a reported model (``lib/catalogue.resolve_price_model``), e.g. ``gpt-4o-2024-08-06`` ->
    ``gpt-4o``; the normalised id lowered when the catalogue does not know it."""
    return model_map_table([(provider, model)])["price_model"][0].as_py()


def model_map_table(pairs: list[tuple[str | None, str | None]]) -> pa.Table:
    """``(provider, model, price_model)`` for each distinct reported pair, for joining in SQL.

    Every pair resolved before on this machine is read from a table kept on disk per catalogue version and code
    (``disk_cache``, like ``catalogue_table``); only new pairs import the catalogue, and are added to it."""
    from pipelines.lib import disk_cache

    path = disk_cache.root() / "catalogue-models.arrow"
    key = hashlib.sha256("\x1f".join(_cache_key()).encode("utf-8")).hexdigest()[:16]
    known = _read_model_map(path, key)
    missing = [pair for pair in dict.fromkeys(pairs) if pair not in known]
    if missing:
        from pipelines.lib import catalogue

        known.update({pair: catalogue.resolve_price_model(*pair) for pair in missing})
        _write_model_map(path, key, known)
    return pa.table({
        "provider": pa.array([p for p, _ in pairs], pa.string()),
        "model": pa.array([m for _, m in pairs], pa.string()),
        "price_model": pa.array([known[pair] for pair in pairs], pa.string()),
    })


def _read_model_map(path: Path, key: str) -> dict[tuple, str | None]:
    """The pairs resolved before under ``key`` ({} when the file is missing, unreadable or of another key)."""
    try:
        with pa.OSFile(str(path), "rb") as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        return {}
    if (table.schema.metadata or {}).get(b"key") != key.encode():
        return {}
    return {(p, m): r for p, m, r in zip(*(table[c].to_pylist() for c in ("provider", "model", "price_model")))}


def _write_model_map(path: Path, key: str, known: dict[tuple, str | None]) -> None:
    """Keep ``known`` under ``key`` (written under a temporary name, then renamed; skipped when it cannot be)."""
    import os
    import tempfile

    table = pa.table({"provider": pa.array([p for p, _ in known], pa.string()),
                      "model": pa.array([m for _, m in known], pa.string()),
                      "price_model": pa.array(list(known.values()), pa.string())}).replace_schema_metadata({"key": key})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False) as partial:
            with pa.ipc.new_file(partial, table.schema) as writer:
                writer.write_table(table)
        os.replace(partial.name, path)
    except OSError:
        pass


def _to_table(rows: list[_Row]) -> pa.Table:
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for row in rows:
        for name in ("provider", "price_model", "price_variant", "effective_from", "effective_to", "utc_time_from",
                     "utc_time_to", "tier_start_tokens", "priority", "precedence", "price_source", "weekdays_only"):
            columns[name].append(getattr(row, name))
        for name, value in zip(PRICE_COLUMNS, row.prices):
            columns[name].append(value)
    return pa.table(columns, schema=SCHEMA)
