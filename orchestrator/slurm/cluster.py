"""What campaigns ask Slurm about their jobs: the array size limit, the state of every element
in one sacct call, what is still queued, and scancel. Each is one command through the runner
(wirewise.orchestrator.slurm.command)."""

from __future__ import annotations

from wirewise.orchestrator.slurm.command import slurm
from wirewise.ranges import ARRAY_INDICES, parse_ranges

DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default MaxArraySize


def max_array_size() -> int:
    """MaxArraySize from `scontrol show config`: an array's largest index is this minus one."""
    for line in slurm("scontrol", "show", "config").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "MaxArraySize" and value.strip().isdigit():
            return int(value.strip())
    return DEFAULT_MAX_ARRAY_SIZE


def element_states(array_ids: list[str]) -> dict[str, str]:
    """{"ARRAY_INDEX" or "JOB": STATE} for every element of these arrays (or these jobs), from one sacct call."""
    if not array_ids:
        return {}
    return element_states_from(slurm("sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", ",".join(array_ids)))


def element_states_from(text: str) -> dict[str, str]:
    """`sacct -X -n -P -o JobID,State` lines -> {"ARRAY_INDEX" or "JOB": STATE}. A pending range
    shows as ARRAY_[2-9%2]: each index in it is PENDING unless a row of its own says otherwise
    (Slurm 25.11 was seen to keep the range as submitted, ARRAY_[0-9%2], beside rows 0 and 1
    RUNNING). 'CANCELLED by 0' reads as CANCELLED."""
    states: dict[str, str] = {}
    pending: dict[str, str] = {}
    for line in text.splitlines():
        job, _, state = line.partition("|")
        state = state.split()[0] if state.strip() else "UNKNOWN"
        array, _, index = job.partition("_")
        if index.startswith("["):
            for i in parse_ranges(index.strip("[]").split("%")[0], ARRAY_INDICES, option=f"sacct's {job}"):
                pending[f"{array}_{i}"] = state
        else:
            states[job] = state  # an element, or a job of its own (submitit submits one bundle as a plain job)
    return {**pending, **states}


def cancel(job_ids: list[str]) -> None:
    if job_ids:
        slurm("scancel", *job_ids)


def queued_elements(array_ids: list[str]) -> set[str]:
    """Elements of these arrays still in the queue (pending or running), one per line (`-r`).
    An element cancelled before it started never reaches sacct: it is simply no longer here."""
    if not array_ids:
        return set()
    out = slurm("squeue", "-h", "-r", "-o", "%i", "-j", ",".join(array_ids))
    return {line.strip() for line in out.splitlines() if line.strip()}


def allow_requeue(job_id: str) -> None:
    """Let a job submitted with --no-requeue go back to the queue: what a preempted campaign
    element asks just before submitit's own `scontrol requeue` (which --no-requeue refuses:
    "Requested operation is presently disabled")."""
    slurm("scontrol", "update", JobId=job_id, Requeue="1")
