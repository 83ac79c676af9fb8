"""What a job was given, read where it runs: the Slurm allocation and the GPUs it may use by
their physical index (both as wirewise.jobenv reads them), this node's wiring, and whether the
GPUs can run ranks at all.

- Inside an allocation the job's GPUs are its own: all of them are candidates.
- On a workstation (no CUDA_VISIBLE_DEVICES) the candidates are the GPUs NVML sees idle.
- Inside the ranks `wirewise launch` started (its launch file, wirewise.launch_file) the GPUs, nodes
  and wiring are the ones it chose: the ranks describe the job they are part of. Ranks started
  otherwise (torchrun's WORLD_SIZE and LOCAL_WORLD_SIZE set) take their node's visible GPUs.
- Without a driver there are no GPUs to run on: ranks run on the CPU (gloo). A test cluster's
  fake GPUs (Slurm hands out character devices, CUDA_VISIBLE_DEVICES=0,1) are placed on the
  wiring given with --topology-file, and CPU ranks stand in for them, as `campaign` runs do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wirewise.errors import UserError
from wirewise.launch_file import LAUNCH_FILE, LaunchFile, launch_dir, read_launch
from wirewise.jobenv import JobEnv, read_job_env
from wirewise.topology import Topology, node_name, read_topology


@dataclass(frozen=True)
class Allocation:
    slurm: JobEnv | None  # the Slurm job it runs in; None outside one
    nodes: list[str]  # host names, node 0 first
    topo: Topology | None  # this node's wiring: the file given, else NVML's; None where neither
    live: bool  # a driver answers: ranks can run on the GPUs
    candidates: list[int] | None  # physical GPUs the job may take; None: no wiring to name them by
    candidates_source: str
    ranks_per_node: int | None  # set inside running ranks: how many there are on each node


def read_allocation(env: Mapping[str, str], topology_file: Path | None = None) -> Allocation:
    job = read_job_env(env)
    slurm = job if job.in_slurm else None
    found = launch_dir(env)
    if job.ranks is not None and found is not None and (found / LAUNCH_FILE).is_file():
        return _launched(slurm, read_launch(found))
    topo, live = _wiring(topology_file)
    candidates, source = _candidates(job, topo, live, topology_file)
    nodes = job.nodes or [node_name(topo)]
    if job.ranks is not None and job.ranks.nodes != len(nodes):  # ranks started across machines without Slurm
        nodes = [nodes[0], *(f"node{i}" for i in range(1, job.ranks.nodes))]
    return Allocation(slurm, nodes, topo, live, candidates, source, job.ranks.local_world_size if job.ranks else None)


def _launched(slurm: JobEnv | None, launched: LaunchFile) -> Allocation:
    """The allocation as `wirewise launch` left it for its ranks."""
    topo = Topology.model_validate(launched.topology) if launched.topology else None
    return Allocation(
        slurm, launched.nodes, topo, launched.device == "cuda", launched.gpus or launched.assigned_gpus or None,
        "wirewise launch (its launch file)", launched.processes_per_node,
    )


def _wiring(topology_file: Path | None) -> tuple[Topology | None, bool]:
    """(the wiring, whether a driver answers here)."""
    from wirewise.nvml import busy_gpus

    if topology_file is not None:
        return read_topology(topology_file), busy_gpus() is not None
    try:
        return read_topology(None), True
    except UserError:  # no GPU or driver here: CPU ranks
        return None, False


def _candidates(job: JobEnv, topo: Topology | None, live: bool, topology_file) -> tuple[list[int] | None, str]:
    from wirewise.orchestrator.decide import free_gpus

    if topo is None:
        return None, "no GPU wiring known here"
    visible = job.physical_gpus()
    if visible is None:
        return free_gpus(topo.gpus, None, None, live)
    outside = [gpu for gpu in visible if gpu >= topo.gpus]
    if outside:
        raise UserError(f"CUDA_VISIBLE_DEVICES names GPU {outside[0]}, which the wiring "
                        f"({topology_file or 'NVML'}) does not have (GPUs 0-{topo.gpus - 1})")
    return sorted(set(visible)), "the job's GPUs (CUDA_VISIBLE_DEVICES)"

