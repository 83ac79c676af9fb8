"""The time of one training step of a data-parallel strategy, from its descriptor.

    compute     6 x params x tokens per rank / (peak x MFU): 2 parts forward, 4 backward
                (Kaplan et al. 2020; the optimizer step rides in the achieved MFU)
    traffic     each collective of the strategy's descriptor (wirewise.strategy.Traffic) takes
                its bus bytes / its op's busbw: 2 x params x 2(N-1)/N bytes for bf16 gradients
                all-reduced (nccl-tests' bus factor, doc/PERFORMANCE.md)
    exposed     what compute does not hide, phase by phase: a collective the implementation does
                not overlap (DeepSpeed ZeRO-1/2 without overlap_comm, the all-gather after the
                optimizer step) is all exposed; an overlapped one hides behind `hidden` x the
                compute of its phase, except the one call with nothing beside it: the first
                forward gather, the last backward reduction (one layer's share for per-layer
                calls, one 25 MB bucket, DDP's bucket_cap_mb, for bucketed ones)
    a step      compute + exposed

Two numbers are properties of the implementation on a machine rather than of the wire: the
achieved MFU and `hidden`, the share of a phase's compute that communication can run beside
(1: NCCL's kernels and the compute never slow each other). wirewise.orchestrator.advise.fit
fits both to measured steps; without measurements they are ASSUMED_MFU and 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from wirewise.strategy import StrategySpec

# Share of the datasheet peak an eager training step reaches: measured on one H200, Mistral-style
# 1.04B, 8 x 2048 tokens, 35% with autocast over fp32 weights, 39% bf16 weights, 46% compiled
# (docs/facts.md); a 7B model's wider matmuls run closer to peak.
ASSUMED_MFU = 0.45
ASSUMED_HIDDEN = 1.0
FORWARD_SHARE = 1 / 3  # of 6 x params x tokens: forward 2, backward 4
BUCKET_BYTES = 25e6  # torch DDP's bucket_cap_mb = 25: the last bucket waits for the end of the backward


@dataclass(frozen=True)
class Step:
    compute_s: float
    comm_s: float  # every collective of the step, end to end
    exposed_s: float  # the communication compute does not hide

    @property
    def step_s(self) -> float:
        return self.compute_s + self.exposed_s

    def as_dict(self) -> dict:
        return {"step_time_s": _round(self.step_s), "compute_s": _round(self.compute_s),
                "comm_s": _round(self.comm_s), "exposed_comm_s": _round(self.exposed_s)}


@dataclass(frozen=True)
class Work:
    """What one rank does in a step."""

    params: int
    layers: int
    tokens: int  # per rank per step (micro-batch x sequence)
    ranks: int
    peak_flops: float  # dense bf16 FLOP/s of one GPU
    precision: str  # fp32 | bf16-mixed | bf16: sets the bytes on the wire


def step_time(spec: StrategySpec, work: Work, busbw_gbs: Mapping[str, float] | float | None,
              mfu: float = ASSUMED_MFU, hidden: float = ASSUMED_HIDDEN) -> Step:
    """One step of `spec`. `busbw_gbs`: one figure for every op, or per op (all_reduce,
    all_gather, reduce_scatter); None or one rank: no communication."""
    compute = 6.0 * work.params * work.tokens / (work.peak_flops * mfu)
    cover = {"forward": compute * FORWARD_SHARE, "backward": compute * (1 - FORWARD_SHARE), "step": 0.0}
    if work.ranks < 2 or not busbw_gbs:
        return Step(compute, 0.0, 0.0)
    alone = dict.fromkeys(cover, 0.0)  # not overlapped, or the call with nothing beside it
    beside = dict.fromkeys(cover, 0.0)  # overlapped with the phase's compute
    total = 0.0
    for traffic in spec.traffic:
        rate = busbw_gbs if isinstance(busbw_gbs, (int, float)) else busbw_gbs[traffic.op]
        seconds = traffic.bus_bytes(work.params, work.ranks, work.precision) / (rate * 1e9)
        total += seconds
        if not traffic.overlap or traffic.phase == "step":
            alone[traffic.phase] += seconds
            continue
        edge = seconds / _calls(traffic, work)
        alone[traffic.phase] += edge
        beside[traffic.phase] += seconds - edge
    exposed = sum(alone[p] + max(0.0, beside[p] - hidden * cover[p]) for p in cover)
    return Step(compute, total, exposed)


def _calls(traffic, work: Work) -> int:
    """How many calls the collective is cut into over a step."""
    if traffic.unit == "layer":
        return max(1, work.layers)
    return max(1, math.ceil(traffic.buffer_bytes(work.params, work.precision) / BUCKET_BYTES))


def tokens_per_s(step: Step, work: Work) -> float:
    """Samples' tokens per second over all ranks."""
    return work.ranks * work.tokens / step.step_s


def _round(seconds: float) -> float:
    return float(f"{seconds:.4g}")
