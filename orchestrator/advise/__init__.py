"""Advice for a new job: memory per GPU for each data-parallel strategy (estimate.py, memory.py,
params.py) and which strategy to run on a chosen GPU set (strategy.py).

    estimate(model, gpus, ...) -> dict                     `wirewise estimate --json`
    advise_placement(topo, placement, model, ...) -> dict   the strategy part of `wirewise place`
"""

from __future__ import annotations

from wirewise.orchestrator.advise.estimate import card_memory, check_sizes, estimate, memory_rows
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
    history=None,
) -> dict:
    """Which strategies fit on these GPUs, how fast each would run there, and the pick. With a
    store: measured tokens/s of this model and set shape, the step model fitted to the wiring's
    training results, and the set's measured busbw per op.

    `model`: a registry name or config path, or a ModelShape (`wirewise launch --params N`).
    `topo` None: the wiring is unknown (CPU ranks). `ranks`: the data-parallel ranks when they
    are more than `gpus` (the same set on several nodes); the set's measured history is then
    not used (it is by set shape on one node), and `busbw_gbs` is what the caller knows of the
    slowest wire (None: the network's is not known). `history`: the wiring's measured history
    (placement.history.History) the caller's placement read already; None: no measured advice."""
    check_choice(accounting, ACCOUNTINGS, "accounting")
    ranks = ranks or len(gpus)
    check_sizes(ranks, batch_size, seq_len)
    shape = model if isinstance(model, ModelShape) else model_shape(model, seq_len)
    gpu_name = topo.gpu_model if topo is not None else None
    memory_gb, memory_source = card_memory(gpu_mem_gb, gpu_name)
    memory = memory_rows(shape, ranks, batch_size, accounting, memory_gb, store)
    one_set = topo is not None and history is not None and ranks == len(gpus)  # one GPU included
    measured = _measured(history, gpus, shape, batch_size, busbw_gbs) if one_set else {}
    advice = advise(shape, ranks, memory, busbw_gbs, gpu_name, batch_size, **measured)
    return {**advice, "model": shape.name, "params": shape.params, "gpu_mem_gb": memory_gb, "gpu_mem_source": memory_source}


def _measured(history, gpus: list[int], shape, batch_size: int, busbw_gbs: float | None) -> dict:
    """What the store says about training on this wiring, as `advise` takes it."""
    from wirewise.orchestrator.advise.fit import OPS, fit, left_out, observations
    from wirewise.topology.fingerprint import set_shape

    topo = history.topo
    steps = observations(history)
    fits = {s: fit([o for o in steps if o.strategy == s]) for s in {o.strategy for o in steps}}
    placed = set_shape(topo.links, topo.gpu_names, sorted(gpus))
    op_busbw = {}
    for op in OPS:
        found = history.measured(op).get(placed)
        op_busbw[op] = found.busbw_gbs if found else busbw_gbs
    seq_len = shape.tokens_per_sample if shape.kind == "causal-lm" else None
    measured = history.tokens_per_s(gpus, shape.name, batch_size, seq_len)
    return {"measured": measured, "fits": fits, "pooled": fit(steps, shares=(1.0,)),
            "op_busbw": op_busbw if busbw_gbs is not None else None, "notes": left_out(history)}
