"""Which GPUs of a node are free right now: Slurm's view of a node (`scontrol show node -d`, its
`GresUsed=gpu:h200:2(IDX:0-1)` field), or NVML's running processes on this machine."""

from __future__ import annotations

import re
import shutil
import subprocess

from wirewise.errors import UserError

_GRES_USED = re.compile(r"GresUsed=(\S*)")
_INDICES = re.compile(r"gpu[^,(]*\(IDX:([^)]*)\)")
_JOB_NODE_GRES = re.compile(r"^\s*Nodes=(\S+) .*GRES=gpu[^(]*\(IDX:([^)]*)\)")


def used_from_scontrol(text: str) -> set[int]:
    """GPU indices in use from `scontrol show node -d` output (several GPU types, ranges, N/A)."""
    found = _GRES_USED.search(text)
    if not found:
        return set()
    used: set[int] = set()
    for spec in _INDICES.findall(found.group(1)):
        used |= expand_indices(spec)
    return used


def expand_indices(spec: str) -> set[int]:
    """'0-1,4' -> {0, 1, 4}; 'N/A' and '' -> set()."""
    indices: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part or not part[0].isdigit():
            continue
        low, _, high = part.partition("-")
        indices.update(range(int(low), int(high or low) + 1))
    return indices


def parse_free_list(text: str, gpus: int) -> list[int]:
    """`--free 0,1,4-7` -> [0, 1, 4, 5, 6, 7]; one line naming the first bad item otherwise."""
    for part in text.split(","):
        if not re.fullmatch(r"\s*\d+(\s*-\s*\d+)?\s*", part):
            raise UserError(f"--free {text!r}: {part!r} is not a GPU index or range (e.g. 0,1,4-7)")
    return sorted(expand_indices(text.replace(" ", "")))


def slurm_used(node: str) -> set[int] | None:
    """GPUs Slurm has handed out on `node`; None where there is no scontrol or Slurm does not
    know the node (a stored topology of a machine outside this cluster)."""
    if shutil.which("scontrol") is None:
        return None
    proc = subprocess.run(["scontrol", "show", "node", "-d", node], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0 or f"NodeName={node} " not in proc.stdout:
        return None
    if "(IDX:" in proc.stdout:
        return used_from_scontrol(proc.stdout)
    # Untyped GRES (Gres=gpu:8) show only a count on the node: ask each job running there.
    jobs = subprocess.run(["squeue", "-h", "-w", node, "-t", "RUNNING", "-o", "%A"], capture_output=True, text=True, timeout=30)
    used: set[int] = set()
    for job in jobs.stdout.split():
        used |= set(job_gpus(job, node) or [])
    return used


def job_gpus(job_id: str, node: str | None = None) -> list[int] | None:
    """The GPU indices a running job holds (on `node`, or its first node), from `scontrol show
    job -d`'s `Nodes=vm ... GRES=gpu:2(IDX:0-1)` lines; None while it holds none yet."""
    proc = subprocess.run(["scontrol", "show", "job", "-d", job_id], capture_output=True, text=True, timeout=30)
    for line in proc.stdout.splitlines():
        found = _JOB_NODE_GRES.search(line)
        if found and (node is None or found.group(1) == node):
            return sorted(expand_indices(found.group(2)))
    return None


def nvml_used() -> set[int] | None:
    """GPUs running a compute process on this machine; None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library or no driver: not known
        return None
    try:
        used = set()
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            if pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                used.add(index)
        return used
    finally:
        pynvml.nvmlShutdown()


def free_gpus(gpus: int, given: list[int] | None, node: str | None, live: bool) -> tuple[list[int], str]:
    """(free GPU indices, where that comes from): --free, else Slurm for a named node, else NVML
    on this machine, else all of them."""
    if given is not None:
        return given, "--free"
    if node:
        used = slurm_used(node)
        if used is not None:
            return [g for g in range(gpus) if g not in used], "slurm (scontrol show node -d)"
    if live:
        used = nvml_used()
        if used is not None:
            return [g for g in range(gpus) if g not in used], "nvml (running processes)"
    return list(range(gpus)), "all (no --free, Slurm or NVML view)"
