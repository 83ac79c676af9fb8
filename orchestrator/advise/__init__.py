"""Advice for a new job: memory per GPU for each data-parallel strategy (estimate.py, memory.py,
params.py) and which strategy to run on a chosen GPU set (strategy.py).

    estimate(model, gpus, ...) -> dict                     `wirewise estimate --json`
    advise_placement(topo, placement, model, ...) -> dict   the strategy part of `wirewise place`
"""

from __future__ import annotations

from wirewise.orchestrator.advise.estimate import card_memory, check_sizes, estimate, memory_rows
from wirewise.orchestrator.advise.memory import ACCOUNTINGS, check_choice
from wirewise.orchestrator.advise.params import model_shape
from wirewise.orchestrator.advise.strategy import advise

__all__ = ["advise_placement", "estimate"]


def advise_placement(
    topo,
    gpus: list[int],
    busbw_gbs: float | None,
    model: str,
    store=None,
    batch_size: int = 1,
    seq_len: int | None = None,
    accounting: str = "article",
    gpu_mem_gb: float | None = None,
) -> dict:
    """Which strategies fit on these GPUs, how fast each would run there, and the pick."""
    from wirewise.orchestrator.placement.history import measured_tokens_per_s

    check_choice(accounting, ACCOUNTINGS, "accounting")
    check_sizes(len(gpus), batch_size, seq_len)
    shape = model_shape(model, seq_len)
    memory_gb, memory_source = card_memory(gpu_mem_gb, topo.gpu_model)
    memory = memory_rows(shape, len(gpus), batch_size, accounting, memory_gb, store)
    measured = measured_tokens_per_s(store, topo, gpus, model) if store is not None and len(gpus) > 1 else {}
    advice = advise(shape, len(gpus), memory, busbw_gbs, topo.gpu_model, batch_size, measured)
    return {**advice, "model": model, "params": shape.params, "gpu_mem_gb": memory_gb, "gpu_mem_source": memory_source}
