"""Model FLOPs utilisation: the FLOPs a step must do by formula, over time, over the GPU's peak.

MFU = 6 x N x tokens / step time / (peak FLOP/s x GPUs): 2 N FLOPs per token forward and 4 N
backward, with N every parameter (embeddings included, as the plain-loop comparison counts).
Language models count sequence positions as tokens; vision transformers count patches + CLS
per image. `mfu_with_attention` adds the attention score and value products that 6N leaves
out: 12 x layers x hidden x sequence per token (PaLM's appendix B, no causal discount).

The record's `mfu` is against the GPU's datasheet dense bf16 peak, its one basis
(wirewise.record.MFU_BASIS), so MFUs pooled anywhere are alike; WIREWISE_PEAK_TFLOPS (a measured
bf16 matmul peak, say) gives a second MFU beside it in extra (mfu_measured_peak).
"""

from __future__ import annotations


from wirewise.settings import PEAK_TFLOPS
from wirewise.topology.hardware import datasheet_peak


def datasheet_flops(device_name: str | None) -> tuple[float | None, str]:
    """(the datasheet's peak FLOP/s per GPU, where it comes from); (None, why) when unknown."""
    tflops, source = datasheet_peak(device_name)
    return (tflops * 1e12 if tflops else None), source


def measured_flops() -> tuple[float | None, str | None]:
    """(the measured peak FLOP/s per GPU WIREWISE_PEAK_TFLOPS gives, its setting); (None, None) unset."""
    given = PEAK_TFLOPS.get()
    if not given:
        return None, None
    return float(given) * 1e12, f"{PEAK_TFLOPS.name}={given}"


def train_flops_per_token(n_params: int, n_layers: int, hidden: int, context: int) -> tuple[float, float]:
    """(6N, 6N + attention) FLOPs per token for one forward and backward."""
    dense = 6.0 * n_params
    return dense, dense + 12.0 * n_layers * hidden * context


def mfu(flops_per_step: float, step_time_s: float, peak: float | None, gpus: int) -> float | None:
    if peak is None or step_time_s <= 0:
        return None
    return flops_per_step / step_time_s / (peak * gpus)
