"""Which CUDA_VISIBLE_DEVICES entries address a task's planned GPUs inside a job.

Plans name GPUs by their physical index (nvidia-smi's, PCI bus order). Inside a Slurm job the
same GPU may go by another name:
- with device cgroups Slurm renumbers the job's GPUs from 0, and SLURM_JOB_GPUS keeps the
  node's indices: position p of CUDA_VISIBLE_DEVICES is node GPU SLURM_JOB_GPUS[p];
- recent Slurm may put UUIDs in CUDA_VISIBLE_DEVICES;
- outside Slurm (the local executor) the physical index is the name.
Slurm's own index follows gres.conf, which `wirewise topo slurm` writes in nvidia-smi order;
UUIDs are matched through NVML, never by position alone (docs/facts.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from wirewise.errors import UserError
from wirewise.nvml import gpu_uuids

UuidLookup = Callable[[], dict[str, int]]  # GPU UUID -> physical index


def device_ids(planned: list[int], env: Mapping[str, str], uuids: UuidLookup = gpu_uuids) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES entries for the planned physical GPUs in a job with this environment;
    None when the physical indices are the names (no restriction in force)."""
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if not planned or "CUDA_VISIBLE_DEVICES" not in env:
        return None
    physical = _physical_of_visible(visible, env, uuids)
    position = {gpu: i for i, gpu in enumerate(physical)}
    missing = [gpu for gpu in planned if gpu not in position]
    if missing:
        raise UserError(
            f"planned GPUs {missing} are not among this job's GPUs {physical}: "
            "the job must hold the whole node (--exclusive with every GPU)"
        )
    return [visible[position[gpu]] for gpu in planned]


def visible_devices(planned: list[int], env: Mapping[str, str], uuids: UuidLookup = gpu_uuids) -> str:
    """The CUDA_VISIBLE_DEVICES value that shows a command the planned physical GPUs, as this
    job names them (device_ids), or by their indices where nothing restricts them."""
    return ",".join(device_ids(planned, env, uuids) or map(str, planned))


def visible_gpus(env: Mapping[str, str], uuids: UuidLookup = gpu_uuids) -> list[int] | None:
    """The physical indices of the GPUs this process may use (CUDA_VISIBLE_DEVICES, read as
    device_ids reads it); None where nothing restricts them."""
    if "CUDA_VISIBLE_DEVICES" not in env:
        return None
    visible = [v.strip() for v in env["CUDA_VISIBLE_DEVICES"].split(",") if v.strip()]
    try:
        return _physical_of_visible(visible, env, uuids)
    except ValueError:
        raise UserError(f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r}: not GPU indices or UUIDs") from None


def _physical_of_visible(visible: list[str], env: Mapping[str, str], uuids: UuidLookup) -> list[int]:
    """The physical index of each visible entry."""
    if any(v.startswith(("GPU-", "MIG-")) for v in visible):
        table = uuids()
        unknown = [v for v in visible if v not in table]
        if unknown:
            raise UserError(f"cannot match CUDA_VISIBLE_DEVICES entries {unknown} to GPUs (NVML does not list them)")
        return [table[v] for v in visible]
    job_gpus = [g.strip() for g in env.get("SLURM_JOB_GPUS", "").split(",") if g.strip()]
    if job_gpus and len(job_gpus) == len(visible) and [int(v) for v in visible] != [int(g) for g in job_gpus]:
        return [int(g) for g in job_gpus]  # renumbered inside the job's cgroup
    return [int(v) for v in visible]
