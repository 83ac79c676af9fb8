"""`wirewise estimate`: memory per GPU for each strategy, judged against the card's memory and
calibrated against the peaks the store measured for the same model and strategy."""

from __future__ import annotations

import re
from statistics import median

from wirewise.errors import UserError
from wirewise.nvml import first_gpu_memory
from wirewise.orchestrator.advise.memory import (
    ACCOUNTINGS,
    Calibration,
    StrategyMemory,
    activation_bytes,
    check_choice,
    dial_order,
    model_state_bytes,
    strategy_memory,
)
from wirewise.orchestrator.advise.params import ModelShape, model_shape
from wirewise.topology import hardware
from wirewise.units import in_gb

# Cards whose name does not carry their memory ("NVIDIA H200" does not; "A100-SXM4-80GB" does),
# in GB by datasheet.
CARD_MEMORY_GB = (("GH200", 96.0), ("H200", 141.0), ("H100", 80.0), ("GB200", 186.0), ("B200", 180.0))


def estimate(
    model: str,
    gpus: int,
    strategies: list[str] | None = None,
    batch_size: int = 1,
    seq_len: int | None = None,
    accounting: str = "article",
    gpu_mem_gb: float | None = None,
    gpu_name: str | None = None,
    store=None,
) -> dict:
    """The estimate as the command prints it (--json)."""
    check_choice(accounting, ACCOUNTINGS, "accounting")
    for strategy in strategies or []:
        check_choice(strategy, dial_order(), "strategy")
    check_sizes(gpus, batch_size, seq_len)
    shape = model_shape(model, seq_len)
    memory_gb, memory_source = card_memory(gpu_mem_gb, gpu_name)
    rows = memory_rows(shape, gpus, batch_size, accounting, memory_gb, store, strategies)
    return {
        "model": model,
        "params": shape.params,
        "counted_by": shape.counted_by,
        "gpus": gpus,
        "batch_size": batch_size,
        "seq_len": shape.tokens_per_sample if shape.kind == "causal-lm" else None,
        "accounting": accounting,
        "accounting_about": ACCOUNTINGS[accounting].about,
        "gpu_mem_gb": memory_gb,
        "gpu_mem_source": memory_source,
        "strategies": [row.as_dict() for row in rows],
    }


def check_sizes(gpus: int, batch_size: int, seq_len: int | None) -> None:
    """The counts an estimate or a placement's advice is asked for, within wirewise.limits."""
    from wirewise.limits import MAX_INT, MAX_RANKS

    if not 1 <= gpus <= MAX_RANKS:
        raise UserError(f"--gpus {gpus}: give at least 1 GPU, at most {MAX_RANKS}")
    for option, value in (("--batch-size", batch_size), ("--seq-len", seq_len)):
        if value is not None and not 1 <= value <= MAX_INT:
            raise UserError(f"{option} {value}: give a whole number of at least 1")


def memory_rows(shape: ModelShape, gpus: int, batch_size: int, accounting: str, memory_gb: float | None,
                store=None, strategies: list[str] | None = None) -> list[StrategyMemory]:
    """Each strategy's memory per GPU, calibrated where the store has measured peaks."""
    return [
        strategy_memory(
            shape, strategy, gpus, batch_size, accounting, memory_gb,
            calibration(store, shape, strategy, accounting) if store is not None else None,
        )
        for strategy in (strategies or dial_order())
    ]


def card_memory(given: float | None, gpu_name: str | None) -> tuple[float | None, str]:
    """(GB of one card, where the figure comes from): given, else the GPU's name, else NVML."""
    if given is not None:
        if not 0 < given < float("inf"):  # nan fails this too
            raise UserError(f"--gpu-mem-gb must be positive, a number of GB (got {given:g})")
        return given, "--gpu-mem-gb"
    if gpu_name:
        from_name = memory_from_name(gpu_name)
        if from_name:
            return from_name, f"the GPU's name ({gpu_name})"
    probed = probe_memory()
    if probed:
        return probed
    return None, "unknown: no GPU found here; give --gpu-mem-gb"


def memory_from_name(name: str) -> float | None:
    model = hardware.normalize_model(name)
    stated = re.search(r"(\d+)\s*GB\b", model)
    if stated:
        return float(stated.group(1))
    for fragment, gb in CARD_MEMORY_GB:
        if re.search(rf"\b{fragment}\b", model):
            return gb
    return None


def probe_memory() -> tuple[float, str] | None:
    """GPU 0's memory through NVML, None where there is no driver or GPU."""
    found = first_gpu_memory()
    if found is None:
        return None
    total, name = found
    return in_gb(total, 1), f"probed ({name}, NVML)"


def calibration(store, shape: ModelShape, strategy: str, accounting: str) -> Calibration | None:
    """Measured peak / estimate over the store's GPU runs of this model and strategy (each
    estimated at the run's own ranks, batch and sequence length); None without such runs."""
    from wirewise.orchestrator.store.results import ok_results

    runs = ok_results(store, ("peak_mem_bytes", "ranks", "micro_batch", "seq_len", "source"),
                      present=("peak_mem_bytes",), workload="train", model=shape.name, strategy=strategy, device="gpu")
    ratios, peaks, sources = [], [], set()
    for peak, ranks, batch, seq, source in runs:
        if not peak:
            continue
        ranks, batch = ranks or 1, batch or 1
        tokens = seq if shape.kind == "causal-lm" and seq else shape.tokens_per_sample
        estimated = sum(model_state_bytes(shape.params, strategy, ranks, accounting).values())
        estimated += activation_bytes(shape, batch, tokens)
        ratios.append(max(peak) / estimated)
        peaks.append(max(peak))
        sources.add(source)
    if not ratios:
        return None
    return Calibration(round(median(ratios), 3), len(ratios), in_gb(median(peaks)), sorted(sources))
