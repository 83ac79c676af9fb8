"""The ranks of a task run here: which GPUs, how many ranks, which backend, from the
options people type (--gpus, --nproc, --backend) and the GPUs this machine has."""

from __future__ import annotations

from pathlib import Path

from wirewise.errors import UserError
from wirewise.nvml import gpu_count
from wirewise.ranges import GPU_INDICES, parse_ranges
from wirewise.workloads import Ranks


def choose_ranks(gpus_text: str | None, nproc: int | None, backend: str | None, *, default_ranks: int | None) -> Ranks:
    """GPUs, rank count and backend from --gpus / --nproc / --backend and the GPUs this machine has.

    Without --gpus or --nproc a run takes `default_ranks` ranks (None: every GPU here, or
    two CPU ranks). nccl needs GPUs; gloo may be given GPU indices on a machine without
    any: one CPU rank per index, and no index recorded (no GPU measured anything)."""
    gpus = parse_ranges(gpus_text, GPU_INDICES, option="--gpus", distinct=True)
    if nproc is not None and nproc < 1:
        raise UserError(f"--nproc {nproc}: give at least 1 rank")
    if gpus and nproc is not None and nproc != len(gpus):
        raise UserError(f"--nproc {nproc} and --gpus {gpus_text} disagree (one rank per GPU): give one of them")
    if backend is not None and backend not in ("nccl", "gloo"):
        raise UserError(f"--backend {backend!r}: choose nccl or gloo")
    available = gpu_count()
    explicit_gloo = backend == "gloo"
    backend = backend or ("nccl" if available else "gloo")
    if not available and (backend == "nccl" or (gpus and not explicit_gloo)):
        raise UserError("no GPU is visible on this machine (no NVIDIA driver or device): run CPU ranks with --backend gloo")
    if available and any(g >= available for g in gpus):
        raise UserError(f"--gpus {gpus_text}: this machine has GPUs 0..{available - 1}")
    if not available and gpus:  # explicit gloo: CPU ranks, as many as indices given
        return Ranks([], len(gpus), backend)
    if backend == "nccl" and not gpus:
        wanted = nproc or default_ranks or available
        if wanted > available:
            raise UserError(f"--nproc {wanted}: this machine has {available} GPU(s)")
        gpus = list(range(wanted))
    return Ranks(gpus, len(gpus) or nproc or default_ranks or 2, backend)


def cpu_rank_warnings(ranks: Ranks, gpus_text: str | None, topology_file) -> list[str]:
    """What a person should know when the ranks run on CPU although GPUs were named."""
    if not ranks.on_cpu:
        return []
    warnings = []
    if gpus_text:
        warnings.append(f"no GPU is visible here: --gpus {gpus_text} runs {ranks.count} CPU rank(s), recorded without GPU indices")
    if topology_file:
        warnings.append("the ranks run on CPU: --topology-file describes GPUs they do not use, so their records carry "
                        "no fingerprint or fabric")
    return warnings


def checked_topology_file(path: str | Path | None) -> str | None:
    """--topology-file, read now so a missing or malformed file is a one-line error before any
    rank starts; the task gets the absolute path (ranks may run from another folder)."""
    if path is None:
        return None
    from wirewise.topology import read_topology

    read_topology(path)
    return str(Path(path).resolve())
