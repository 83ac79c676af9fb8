"""Model FLOPs utilisation: the FLOPs a step must do by formula, over time, over the GPU's peak.

MFU = 6 x N x tokens / step time / (peak FLOP/s x GPUs): 2 N FLOPs per token forward and 4 N
backward, with N every parameter (embeddings included, as the plain-loop comparison counts).
Language models count sequence positions as tokens; vision transformers count patches + CLS
per image. `mfu_with_attention` adds the attention score and value products that 6N leaves
out: 12 x layers x hidden x sequence per token (PaLM's appendix B, no causal discount).

The peak is dense bf16 tensor-core FLOP/s from the vendor's datasheet for the GPU's name,
unless WIREWISE_PEAK_TFLOPS gives one (a measured matmul peak, say); the record says which.
"""

from __future__ import annotations

import os

from wirewise.topology.hardware import datasheet_bf16_tflops

PEAK_ENV = "WIREWISE_PEAK_TFLOPS"

def peak_flops(device_name: str | None) -> tuple[float | None, str]:
    """(peak FLOP/s per GPU, where the figure comes from); (None, why) when unknown."""
    override = os.environ.get(PEAK_ENV)
    if override:
        return float(override) * 1e12, f"{PEAK_ENV}={override}"
    return datasheet_flops(device_name)


def datasheet_flops(device_name: str | None) -> tuple[float | None, str]:
    if not device_name:
        return None, "no GPU: MFU is not computed on CPU"
    known = datasheet_bf16_tflops(device_name)
    if known:
        fragment, tflops = known
        return tflops * 1e12, f"datasheet dense bf16 for {fragment}: {tflops:g} TFLOP/s"
    return None, f"no datasheet peak known for {device_name!r}: set {PEAK_ENV}"


def train_flops_per_token(n_params: int, n_layers: int, hidden: int, context: int) -> tuple[float, float]:
    """(6N, 6N + attention) FLOPs per token for one forward and backward."""
    dense = 6.0 * n_params
    return dense, dense + 12.0 * n_layers * hidden * context


def mfu(flops_per_step: float, step_time_s: float, peak: float | None, gpus: int) -> float | None:
    if peak is None or step_time_s <= 0:
        return None
    return flops_per_step / step_time_s / (peak * gpus)
