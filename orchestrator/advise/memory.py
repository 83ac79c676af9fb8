"""Memory per GPU for each data-parallel strategy: model states by the ZeRO formulas, plus an
activation estimate, calibrated against measured peaks where the store has them.

Model states come from each strategy's descriptor (wirewise.strategy.StrategySpec.state_bytes:
its ZeRO stage says what it shards; ZeRO paper, arXiv 1910.02054; Psi parameters, N ranks):
    accounting "zero"    (16 bytes/param: 2 params + 2 grads + 12 fp32 master, momentum,
                          variance, as DeepSpeed keeps them)
        ddp 16 Psi, zero1 4 Psi + 12 Psi/N, zero2 2 Psi + 14 Psi/N, zero3 / fsdp 16 Psi/N
    accounting "article" (12 bytes/param: bf16 params + bf16 grads + fp32 Adam moments, no
                          master copy, as the seed article counts: Mistral-7B ddp ~87 GB)

Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models"): 34 x tokens x batch x hidden bytes per layer with 16-bit activations and no
recomputation; the 5 a s / h term of stored attention scores is left out because SDPA
kernels do not store them. A language model adds its logits: 2 bytes (bf16) + 4 (the fp32
copy the loss reads) per token per vocabulary entry.

GB here is 10^9 bytes, as the article and GPU datasheets count (wirewise.units.GB, the one unit of memory).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from wirewise import registry
from wirewise.errors import UserError
from wirewise.orchestrator.advise.params import ModelShape
from wirewise.strategy import ACCOUNTINGS
from wirewise.units import GB, in_gb

# What a job may use of the card: the CUDA context, NCCL buffers and allocator fragmentation
# take the rest (PyTorch reserves in blocks; a few GB are gone before the first tensor).
USABLE_SHARE = 0.9
# Activation bytes per layer per token per hidden unit (Korthikanti et al., 16-bit, no recompute).
ACTIVATION_BYTES_PER_LAYER = 34
LOGIT_BYTES = 2 + 4


def dial_order() -> list[str]:
    """Every strategy, least sharded first (ddp, zero1, zero2, zero3, fsdp, plug-ins in place)."""
    return [spec.name for spec in registry.STRATEGIES.by_dial()]


@dataclass(frozen=True)
class Calibration:
    factor: float  # measured peak / estimate, median over the results
    results: int
    measured_peak_gb: float  # median of the measured peaks (largest rank of each run)
    sources: list[str] = field(default_factory=list)  # wirewise (benchmarks), job (real jobs)


@dataclass(frozen=True)
class StrategyMemory:
    strategy: str
    params_gb: float
    grads_gb: float
    optimizer_gb: float
    model_state_gb: float
    activation_gb: float
    total_gb: float  # calibrated when a calibration is given
    fits: bool | None  # None: the GPU memory is unknown
    calibration: Calibration | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def check_choice(value: str, choices, what: str) -> str:
    if value not in choices:
        raise UserError(f"unknown {what} {value!r} (use one of {', '.join(choices)})")
    return value


def model_state_bytes(params: int, strategy: str, gpus: int, accounting: str) -> dict[str, float]:
    """Bytes per GPU of params, grads and optimizer state under a strategy's sharding."""
    return registry.STRATEGIES[strategy].state_bytes(params, gpus, ACCOUNTINGS[accounting])


def activation_bytes(shape: ModelShape, batch_size: int, tokens: int) -> float:
    """Activations kept for the backward pass, per GPU, for `batch_size` samples of `tokens`."""
    per_layer = ACTIVATION_BYTES_PER_LAYER * tokens * batch_size * shape.hidden
    logits = LOGIT_BYTES * tokens * batch_size * shape.vocab if shape.vocab else 0
    return shape.layers * per_layer + logits


def strategy_memory(
    shape: ModelShape,
    strategy: str,
    gpus: int,
    batch_size: int,
    accounting: str,
    gpu_mem_gb: float | None,
    calibration: Calibration | None = None,
) -> StrategyMemory:
    states = model_state_bytes(shape.params, strategy, gpus, accounting)
    state = sum(states.values())
    activations = activation_bytes(shape, batch_size, shape.tokens_per_sample)
    total = (state + activations) * (calibration.factor if calibration else 1.0)
    fits = None if gpu_mem_gb is None else total <= USABLE_SHARE * gpu_mem_gb * GB
    return StrategyMemory(
        strategy=strategy,
        params_gb=_gb(states["params"]),
        grads_gb=_gb(states["grads"]),
        optimizer_gb=_gb(states["optimizer"]),
        model_state_gb=_gb(state),
        activation_gb=_gb(activations),
        total_gb=_gb(total),
        fits=fits,
        calibration=calibration,
    )


def _gb(value: float) -> float:
    return in_gb(value)
