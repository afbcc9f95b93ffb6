"""Prefill time by the 2-FLOPs-per-parameter rule: what cached prompt tokens save in time to first token.

A transformer's forward pass costs about 2 FLOPs per parameter per token (one multiply and one add
per weight; attention's own FLOPs are left out, which undercounts long contexts). Prefilling T
uncached prompt tokens on a model of P parameters therefore takes about ``2 x P x T`` FLOPs, and on
a card sustaining ``peak_tflops x utilization`` TFLOP/s about ``2 x P x T / (peak x utilization x
10^12)`` seconds; every token read from the KV cache instead skips its share.

Inputs (documented, all given by the user): ``num_parameters`` from the model config, the card's
peak dense TFLOP/s at the KV dtype (e.g. 989 for an H100 SXM in BF16, NVIDIA's datasheet), and the
fraction of it prefill achieves (model FLOPs utilization; ``DEFAULT_UTILIZATION``).
"""

from __future__ import annotations

import math

FLOPS_PER_PARAMETER_PER_TOKEN = 2
DEFAULT_UTILIZATION = 0.5  # prefill is compute-bound; 40-60% of peak is typical of well-tuned servers


def prefill_flops(num_parameters: int, tokens: int) -> int:
    """FLOPs to prefill ``tokens`` prompt tokens on a model of ``num_parameters`` parameters."""
    return FLOPS_PER_PARAMETER_PER_TOKEN * num_parameters * tokens


def prefill_seconds(num_parameters: int, tokens: int, peak_tflops: float,
                    utilization: float = DEFAULT_UTILIZATION) -> float:
    """Seconds to prefill ``tokens`` tokens (= seconds saved when they are read from cache instead).

    Raises ``ValueError`` unless ``peak_tflops`` is a finite number > 0 and 0 < ``utilization`` <= 1.
    """
    check_card(peak_tflops, utilization)
    return prefill_flops(num_parameters, tokens) / (peak_tflops * 1e12 * utilization)


def check_card(peak_tflops: float, utilization: float) -> None:
    """Raises ``ValueError`` unless ``peak_tflops`` is a finite number > 0 and 0 < ``utilization`` <= 1 (nan
    compares false and inf passes ``> 0``: both are refused)."""
    if not (math.isfinite(peak_tflops) and peak_tflops > 0):
        raise ValueError(f"card throughput must be a positive, finite TFLOP/s, got {peak_tflops}")
    if not 0 < utilization <= 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
