"""Which GPU model a wiring has, for every prediction made on it.

A saved `nvidia-smi topo -m` without the `nvidia-smi -L` lines before it names no GPU, and the
model sets both rates a prediction rests on: the NVLink generation (25 GB/s per link up to
NVLink 4, 50 on NVLink 5) and the PCIe generation (Gen4 x16 32 GB/s, Gen5 64). So the model is
taken, in order, from the topology itself, from `--gpu-name`, from the stored nodes with the
same wiring and named GPUs, never guessed. With none of these the model stays unknown: which
set is best connected is read from the wiring alone (link kinds, NVLink groups, NUMA nodes), so
the placement is made all the same, without a predicted figure, saying why.
"""

from __future__ import annotations

from wirewise.errors import UserError
from wirewise.topology import Topology, hardware


def with_gpu_model(topo: Topology, gpu_name: str | None, store, where: str) -> tuple[Topology, str | None]:
    """(the wiring with its GPUs named, where the name comes from), or (the wiring as it is, None)
    where nothing names them (unknown_model_text says why). `where` names the wiring's source in
    messages (a file, a node)."""
    if gpu_name is not None:
        if not gpu_name.strip():
            raise UserError("--gpu-name is empty: give the model as nvidia-smi -L prints it, e.g. 'NVIDIA H200'")
        known = {hardware.normalize_model(name) for name in topo.gpu_names if name}
        if known - {hardware.normalize_model(gpu_name)}:
            raise UserError(f"{where} names its GPUs {', '.join(sorted(known))}, not {gpu_name!r}: drop --gpu-name")
        return topo.with_gpu_model(gpu_name), "--gpu-name"
    if topo.named:
        return topo, where
    if store is not None:
        from wirewise.orchestrator.store.topology import stored_gpu_models

        models = stored_gpu_models(store, topo.links)
        if len(models) == 1:
            [(model, nodes)] = models.items()
            return topo.with_gpu_model(model), f"stored node {sorted(nodes)[0]} (same wiring)"
    return topo, None


def unknown_model_text(topo: Topology, store, where: str) -> str:
    """Why a wiring's GPU model is unknown (with_gpu_model named none), and what a figure takes."""
    models = {}
    if store is not None:
        from wirewise.orchestrator.store.topology import stored_gpu_models

        models = stored_gpu_models(store, topo.links)
    stored = (f"stored nodes of this wiring have {', '.join(sorted(models))}" if len(models) > 1
              else "no stored node of this wiring names its GPUs")
    return (f"GPU model unknown: {where} names none (no `nvidia-smi -L` lines before the matrix) and {stored}: "
            "the set is chosen by the wiring alone (link kinds, NVLink groups, NUMA nodes)")
