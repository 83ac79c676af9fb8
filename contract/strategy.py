"""What a data-parallel strategy is, as every stage asks it: the descriptor (`StrategySpec`) that
`wirewise.registry.STRATEGIES` holds for each strategy, torch-free, so the control plane reads it
without importing the compute side.

Sharding (ZeRO paper, Rajbhandari et al., arXiv 1910.02054, section 5): a strategy's ZeRO stage
says which model states each of N data-parallel ranks keeps only 1/N of: stage 0 (DDP) none,
1 (P_os) the optimizer state, 2 (P_os+g) also the gradients, 3 (P_os+g+p) also the parameters.
FSDP shards what ZeRO-3 shards (the seed article: "ZeRO-3 and FSDP implement the same basic
idea"), so its stage is 3.

Model states per rank, Psi parameters (the paper's mixed-precision Adam, K = 12):
    bytes per parameter = sum over params, grads, optimizer of b_part / (N if sharded else 1)
    accounting "zero"    2 + 2 + 12  -> DDP 16, ZeRO-1 4 + 12/N, ZeRO-2 2 + 14/N, ZeRO-3 16/N
    accounting "article" 2 + 2 + 8   -> DDP 12, ...  (bf16 params and grads, fp32 Adam moments,
                                        no master copy: the seed article's 87 GB for Mistral-7B)

Traffic per step (the paper, section 7, "Communication Analysis of ZeRO-DP"; the seed article,
Part 2): every strategy moves the whole model's gradients and, where the parameters or their
update are sharded, the whole model's parameters, as collectives over the N ranks:
    DDP            all-reduce of the gradients                          2 Psi per rank
    ZeRO-1, ZeRO-2 reduce-scatter of the gradients, all-gather of the
                   updated parameters after the step                    2 Psi
    ZeRO-3, FSDP   all-gather of the parameters in the forward and again
                   in the backward, reduce-scatter of the gradients     3 Psi (1.5 x DDP)
Each `Traffic` entry is one of those collectives with what a step model needs of it: the op
(for its measured busbw), the buffer in multiples of the model (`payload`, normally 1), the bytes
per element on the wire at each precision, when it runs (forward, backward, or at the step with
no compute left to hide behind), whether the implementation overlaps it with compute, and
how it is cut into calls (buckets or one call per layer, which sets the message sizes).
`bus_bytes` turns it into the bytes that, divided by the op's busbw, give its time: the
buffer x nccl-tests' bus factor, 2(N-1)/N for all-reduce and (N-1)/N for all-gather and
reduce-scatter (nccl-tests doc/PERFORMANCE.md); at large N the paper's 2 Psi and Psi.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

PARTS = ("params", "grads", "optimizer")  # the model states, in the ZeRO paper's order
SHARDED_AT_STAGE: dict[int, tuple[str, ...]] = {  # what each ZeRO stage splits over the ranks
    0: (),
    1: ("optimizer",),
    2: ("optimizer", "grads"),
    3: ("optimizer", "grads", "params"),
}
PRECISIONS = ("fp32", "bf16-mixed", "bf16")  # the precisions a run resolves to (wirewise.workloads.train)
# Volume per rank of each collective a strategy may run, per byte of its buffer at large N
# (the ZeRO paper's accounting; x (N-1)/N at N ranks): all-reduce = reduce-scatter + all-gather.
RING_VOLUME = {"all_reduce": 2, "reduce_scatter": 1, "all_gather": 1}
PHASES = ("forward", "backward", "step")
UNITS = ("bucket", "layer")
NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")  # stored in results.strategy, a String(32) column


@dataclass(frozen=True)
class Accounting:
    """Bytes per parameter of each model state before sharding."""

    params: int
    grads: int
    optimizer: int
    about: str


ACCOUNTINGS = {
    "zero": Accounting(2, 2, 12, "16 B/param: 16-bit params and grads, fp32 master copy and Adam moments (ZeRO, DeepSpeed)"),
    "article": Accounting(2, 2, 8, "12 B/param: bf16 params and grads, fp32 Adam moments, no master copy (the seed article)"),
}

# Bytes per element on the wire, per precision: tensors kept in the weights' dtype (fp32 weights
# under bf16-mixed autocast: DDP's gradients, FSDP's fp32 reduce_dtype), or in the compute dtype
# (DeepSpeed's bf16 mode, FSDP's bf16 param_dtype).
WEIGHT_DTYPE = MappingProxyType({"fp32": 4, "bf16-mixed": 4, "bf16": 2})
COMPUTE_DTYPE = MappingProxyType({"fp32": 4, "bf16-mixed": 2, "bf16": 2})


@dataclass(frozen=True)
class Traffic:
    """One collective a strategy runs every step."""

    op: str  # all_reduce | reduce_scatter | all_gather (names of wirewise.registry.OPS)
    tensor: str  # grads | params: what it moves
    phase: str  # forward | backward | step (after the backward, beside the optimizer step)
    overlap: bool  # issued while compute goes on (DDP's buckets, prefetch, DeepSpeed's overlap_comm)
    unit: str  # bucket | layer: one call per bucket of gradients, or per wrapped layer
    wire_bytes: Mapping[str, int]  # bytes per element on the wire, per precision
    payload: float = 1.0  # the buffer (nccl-tests' size), in multiples of the model's elements

    def __post_init__(self) -> None:
        _check(self.op in RING_VOLUME, f"traffic op {self.op!r} is not one of {', '.join(RING_VOLUME)}")
        _check(self.tensor in ("grads", "params"), f"traffic tensor {self.tensor!r} is not grads or params")
        _check(self.phase in PHASES, f"traffic phase {self.phase!r} is not one of {', '.join(PHASES)}")
        _check(self.unit in UNITS, f"traffic unit {self.unit!r} is not one of {', '.join(UNITS)}")
        _check(set(self.wire_bytes) == set(PRECISIONS), f"wire_bytes needs one value for each of {', '.join(PRECISIONS)}")
        _check(self.payload > 0, "traffic payload must be positive")

    def buffer_bytes(self, params: int, precision: str) -> float:
        """The collective's buffer over the step (nccl-tests' size column, summed over calls)."""
        return self.payload * params * self.wire_bytes[precision]

    def bus_bytes(self, params: int, ranks: int, precision: str) -> float:
        """Bytes that, divided by this op's busbw, give its time over the step (0 on one rank)."""
        return self.buffer_bytes(params, precision) * RING_VOLUME[self.op] * (ranks - 1) / ranks


@dataclass(frozen=True)
class StrategySpec:
    """Everything the stages ask of one strategy (see the module docstring for the sources)."""

    name: str  # as typed (--strategy, campaign specs) and stored (results.strategy)
    label: str  # as drawn (report figures)
    about: str  # one line: what it is
    impl: str  # 'module:attribute' on the compute side: a Strategy class, or a function of a Setup returning one
    zero_stage: int  # 0..3: what it shards (SHARDED_AT_STAGE)
    dial: float  # place on the memory/speed dial, least sharded first: DDP 0, ZeRO-1..3 1..3, FSDP 4
    traffic: tuple[Traffic, ...]
    accelerate: str | None  # templates/accelerate/<name>.yaml for --engine accelerate; None: not offered there
    deepspeed: str | None = None  # templates/deepspeed/<name>.json: set when it runs on DeepSpeed
    deepspeed_overrides: Mapping[str, Any] = field(default_factory=dict)  # merged over that template

    def __post_init__(self) -> None:
        _check(bool(NAME.fullmatch(self.name)), f"strategy name {self.name!r}: lower-case letters, digits, - and _, at most 32")
        _check(self.zero_stage in SHARDED_AT_STAGE, f"{self.name}: zero_stage must be 0, 1, 2 or 3")
        _check(bool(self.traffic), f"{self.name}: a data-parallel strategy moves something every step (traffic)")
        _check(":" in self.impl, f"{self.name}: impl must be 'module:attribute'")
        on_deepspeed = self.deepspeed is not None
        _check(not on_deepspeed or self.zero_stage > 0, f"{self.name}: a DeepSpeed strategy has a ZeRO stage of 1 to 3")
        _check(self.accelerate is None or (self.accelerate == "deepspeed") == on_deepspeed,
               f"{self.name}: accelerate runs a DeepSpeed config through its 'deepspeed' template, and only that one")
        _check(not self.deepspeed_overrides or on_deepspeed, f"{self.name}: deepspeed_overrides without a deepspeed template")
        object.__setattr__(self, "traffic", tuple(self.traffic))

    @property
    def shards(self) -> tuple[str, ...]:
        """The model states each rank keeps 1/N of."""
        return SHARDED_AT_STAGE[self.zero_stage]

    @property
    def on_deepspeed(self) -> bool:
        return self.deepspeed is not None

    def state_bytes(self, params: int, ranks: int, accounting: Accounting) -> dict[str, float]:
        """Bytes per rank of each model state (PARTS) under this strategy's sharding."""
        return {part: params * getattr(accounting, part) / (ranks if part in self.shards else 1) for part in PARTS}

    def bytes_per_param(self, ranks: int, accounting: Accounting = ACCOUNTINGS["zero"]) -> float:
        """Model-state bytes per parameter per rank: 16, 4 + 12/N, 2 + 14/N, 16/N (accounting "zero")."""
        return sum(self.state_bytes(1, ranks, accounting).values())

    def bus_bytes(self, params: int, ranks: int, precision: str) -> float:
        """`Traffic.bus_bytes` summed over one step's collectives: divided by one busbw for all
        ops, the step's communication time; a model with a busbw per op sums `traffic` itself."""
        return sum(t.bus_bytes(params, ranks, precision) for t in self.traffic)

    def variant(self, **changes: Any) -> StrategySpec:
        """The same strategy with some fields changed: a plug-in's one-line descriptor."""
        return dataclasses.replace(self, **changes)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
