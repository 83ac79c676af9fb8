"""Advice for a new job: memory per GPU for each data-parallel strategy (estimate.py, memory.py,
params.py) and which strategy to run on a chosen GPU set (strategy.py).

    estimate(model, gpus, ...) -> dict                     `wirewise estimate --json`
    advise_placement(topo, placement, model, ...) -> dict   the strategy part of `wirewise place`
"""

from __future__ import annotations

from wirewise.errors import UserError
from wirewise.orchestrator.advise.estimate import card_memory, estimate, memory_rows
from wirewise.orchestrator.advise.memory import ACCOUNTINGS, check_choice
from wirewise.orchestrator.advise.params import ModelShape, model_shape
from wirewise.orchestrator.advise.strategy import advise

__all__ = ["advise_placement", "estimate"]


def advise_placement(
    topo,
    gpus: list[int],
    busbw_gbs: float | None,
    model,
    store=None,
    batch_size: int = 1,
    seq_len: int | None = None,
    accounting: str = "article",
    gpu_mem_gb: float | None = None,
    *,
    ranks: int | None = None,
) -> dict:
    """Which strategies fit on these GPUs, how fast each would run there, and the pick.

    `model`: a registry name or config path, or a ModelShape (`wirewise launch --params N`).
    `topo` None: the wiring is unknown (CPU ranks). `ranks`: the data-parallel ranks when they
    are more than `gpus` (the same set on several nodes); the set's measured history is then
    not used (it is by set shape on one node), and `busbw_gbs` is what the caller knows of the
    slowest wire (None: the network's is not known)."""
    from wirewise.orchestrator.placement.history import measured_tokens_per_s

    check_choice(accounting, ACCOUNTINGS, "accounting")
    if batch_size < 1:
        raise UserError("--batch-size must be at least 1")
    shape = model if isinstance(model, ModelShape) else model_shape(model, seq_len)
    ranks = ranks or len(gpus)
    gpu_name = topo.gpu_model if topo is not None else None
    memory_gb, memory_source = card_memory(gpu_mem_gb, gpu_name)
    memory = memory_rows(shape, ranks, batch_size, accounting, memory_gb, store)
    one_set = topo is not None and store is not None and ranks == len(gpus) > 1
    measured = measured_tokens_per_s(store, topo, gpus, shape.name) if one_set else {}
    advice = advise(shape, ranks, memory, busbw_gbs, gpu_name, batch_size, measured)
    return {**advice, "model": shape.name, "params": shape.params, "gpu_mem_gb": memory_gb, "gpu_mem_source": memory_source}
