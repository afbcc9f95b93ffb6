"""KV-cache memory from a model config: bytes per token, per prompt copy, and what fits in G gigabytes.

KV bytes per token = layers x KV heads x head dim x 2 (K and V) x bytes per value (issue 22's
arithmetic): a 70B-class model (80 layers, 8 KV heads, 128 dims, 2 bytes) holds 327,680 bytes
(320 KiB) per token, a 1,200-token preamble 393,216,000 bytes, and an 8 GB cache (8 x 10^9 bytes)
holds 20 copies of it.

A model config is a Hugging Face ``config.json`` (any model's works as is) or one of the small files
shipped in ``models/`` (``llama-3.1-70b``, ``llama-3.1-8b``, ``qwen2.5-72b``, ``mistral-7b``), named
by path or by shipped name. Fields read: ``num_hidden_layers``, ``num_key_value_heads`` (default:
``num_attention_heads``, i.e. no grouped-query attention), ``head_dim`` (default ``hidden_size /
num_attention_heads``), ``torch_dtype`` (bytes per value; an explicit ``kv_cache_bytes_per_value``
wins, e.g. 1 for an FP8 KV cache), and optionally ``num_parameters`` (for the prefill estimate) and
``max_position_embeddings`` (the default context length for seats).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

MODELS_DIR = Path(__file__).with_name("models")
GB = 10**9  # a cache size in GB is decimal gigabytes, as cards and clouds quote them
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp16": 2, "bf16": 2,
               "float8": 1, "fp8": 1, "float8_e4m3fn": 1, "int8": 1}


class ModelConfigError(ValueError):
    """A model config that cannot be used; the message names the file and the missing or bad field."""


@dataclass(frozen=True)
class ModelConfig:
    """What the KV and prefill arithmetic needs from a model (counts; ``bytes_per_value`` in bytes)."""

    name: str
    layers: int
    kv_heads: int
    head_dim: int
    bytes_per_value: int
    num_parameters: int | None = None
    max_context_tokens: int | None = None

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes of K and V one token occupies across all layers."""
        return self.layers * self.kv_heads * self.head_dim * 2 * self.bytes_per_value


def shipped_models() -> list[str]:
    """Names of the model configs shipped with cachemeter (usable as ``--model-config NAME``)."""
    return sorted(p.stem for p in MODELS_DIR.glob("*.json"))


def load_model_config(name_or_path: str | Path) -> ModelConfig:
    """Read a model config: a shipped name (see ``shipped_models``) or a JSON file path.

    Raises ``ModelConfigError`` when the file is missing, not JSON, or lacks a needed field.
    """
    path = Path(name_or_path)
    if not path.is_file() and (MODELS_DIR / f"{name_or_path}.json").is_file():
        path = MODELS_DIR / f"{name_or_path}.json"
    if not path.is_file():
        raise ModelConfigError(f"{name_or_path}: no such model config file, and not a shipped one "
                               f"({', '.join(shipped_models())})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelConfigError(f"{path}: not a readable JSON model config ({exc})") from exc
    except RecursionError as exc:  # json.loads recurses once per nesting level
        raise ModelConfigError(f"{path}: not a model config: JSON nested too deeply") from exc
    if not isinstance(raw, dict):
        raise ModelConfigError(f"{path}: a model config is a JSON object (a Hugging Face config.json)")
    raw = raw.get("text_config", raw) if "num_hidden_layers" not in raw else raw  # multimodal configs nest it
    if not isinstance(raw, dict):
        raise ModelConfigError(f"{path}: text_config is not a JSON object (a multimodal config nests the text model's)")
    return _config(path, raw)


MAX_COUNT = 2**53  # the largest integer a float holds exactly


def _config(path: Path, raw: dict) -> ModelConfig:
    def count(field: str, default=None) -> int:
        value = raw.get(field, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ModelConfigError(f"{path}: {field} must be a positive integer, got {value!r}")
        if value > MAX_COUNT:  # the estimates are floats: a larger count overflowed one (an unexpected error)
            raise ModelConfigError(f"{path}: {field} ({len(str(value))} digits) is beyond any model (at most 2**53)")
        return value

    layers = count("num_hidden_layers")
    heads = count("num_attention_heads") if raw.get("num_attention_heads") is not None else None
    if heads is None and raw.get("num_key_value_heads") is None:
        raise ModelConfigError(f"{path}: num_key_value_heads (or num_attention_heads) must be a positive integer")
    kv_heads = count("num_key_value_heads", heads)
    # grouped-query attention shares each KV head among num_attention_heads / num_key_value_heads query heads
    # (Ainslie et al. 2023; Hugging Face transformers' num_key_value_groups): a config whose counts do not divide
    # is mistyped, and its KV bytes would be wrong
    if heads is not None and heads % kv_heads:
        raise ModelConfigError(f"{path}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads} "
                               "(each KV head serves a whole group of query heads)")
    if "head_dim" in raw and raw["head_dim"] is not None:
        head_dim = count("head_dim")
    else:
        hidden, heads = count("hidden_size"), count("num_attention_heads")
        if hidden % heads:
            raise ModelConfigError(f"{path}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                                   "give head_dim")
        head_dim = hidden // heads
    if "kv_cache_bytes_per_value" in raw:
        bytes_per_value = count("kv_cache_bytes_per_value")
    else:
        dtype = str(raw.get("torch_dtype") or raw.get("dtype") or "bfloat16").lower().removeprefix("torch.")
        if dtype not in DTYPE_BYTES:
            raise ModelConfigError(f"{path}: unknown torch_dtype {dtype!r}; give kv_cache_bytes_per_value")
        bytes_per_value = DTYPE_BYTES[dtype]
    params = count("num_parameters") if raw.get("num_parameters") is not None else None
    context = count("max_position_embeddings") if raw.get("max_position_embeddings") is not None else None
    return ModelConfig(path.stem, layers, kv_heads, head_dim, bytes_per_value, params, context)


def cache_bytes(cache_gb: float) -> int:
    """``cache_gb`` decimal gigabytes in whole bytes. Raises ``ValueError`` unless it is positive and finite in bytes too
    (nan and inf have no whole number of bytes; 1e308 GB overflowed to inf bytes: "OverflowError", a break test)."""
    if not (math.isfinite(cache_gb) and cache_gb > 0 and math.isfinite(cache_gb * GB)):
        raise ValueError(f"--cache-gb must be a positive, finite size in GB, got {cache_gb}")
    return int(cache_gb * GB)


def capacity_tokens(model: ModelConfig, cache_gb: float) -> int:
    """Tokens of KV a cache of ``cache_gb`` decimal gigabytes holds (whole tokens); ``ValueError`` as ``cache_bytes``."""
    return cache_bytes(cache_gb) // model.kv_bytes_per_token


def kv_summary(model: ModelConfig, tokens: int, cache_gb: float, context_tokens: int | None = None) -> dict:
    """The ``cachemeter whatif kv`` answer (bytes, counts).

    ``bytes_per_token``; ``bytes_per_copy`` (one ``tokens``-token prefix); ``copies_fit``: copies of
    that prefix in ``cache_gb``; ``context_tokens`` (given, else the model's maximum context, else
    ``tokens``) and ``seats``: sequences of that length whose KV fits in ``cache_gb`` at once.
    Raises ``ValueError`` for non-positive sizes.
    """
    if tokens <= 0:
        raise ValueError(f"--tokens must be positive, got {tokens}")
    context = context_tokens or model.max_context_tokens or tokens
    if context <= 0:
        raise ValueError(f"--context-tokens must be positive, got {context}")
    budget = cache_bytes(cache_gb)
    per_copy = model.kv_bytes_per_token * tokens
    return {"model": model.name, "bytes_per_token": model.kv_bytes_per_token, "bytes_per_copy": per_copy,
            "cache_bytes": budget, "copies_fit": budget // per_copy, "context_tokens": context,
            "seats": budget // (model.kv_bytes_per_token * context)}

