"""Questions wirewise asks Slurm, each one process with an argument list (never a shell):
the array size limit, the state of every element of a campaign in one sacct call, scancel."""

from __future__ import annotations

import subprocess

from wirewise.errors import UserError

# sacct states after which an element runs no more
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")
DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default MaxArraySize


def _run(argv: list[str], timeout: float = 60) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise UserError(f"{argv[0]} not found: run this where the Slurm client commands are installed") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{argv[0]} did not answer within {timeout:g} s") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        raise UserError(f"{' '.join(argv[:2])} failed: {first}")
    return proc.stdout


def max_array_size() -> int:
    """MaxArraySize from `scontrol show config`: an array's largest index is this minus one."""
    for line in _run(["scontrol", "show", "config"]).splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "MaxArraySize" and value.strip().isdigit():
            return int(value.strip())
    return DEFAULT_MAX_ARRAY_SIZE


def element_states(array_ids: list[str]) -> dict[str, str]:
    """{"ARRAY_INDEX" or "JOB": STATE} for every element of these arrays (or these jobs), from one sacct call.
    A pending range shows as ARRAY_[0-9]: each index in it gets PENDING. 'CANCELLED by 0'
    reads as CANCELLED."""
    if not array_ids:
        return {}
    out = _run(["sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", ",".join(array_ids)])
    states: dict[str, str] = {}
    for line in out.splitlines():
        job, _, state = line.partition("|")
        state = state.split()[0] if state.strip() else "UNKNOWN"
        array, _, index = job.partition("_")
        if index.startswith("["):
            for i in _expand(index.strip("[]").split("%")[0]):
                states[f"{array}_{i}"] = state
        else:
            states[job] = state  # an element, or a job of its own (submitit submits one bundle as a plain job)
    return states


def _expand(ranges: str) -> list[int]:
    """'0-3,7' -> [0, 1, 2, 3, 7]."""
    found = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return found


def cancel(job_ids: list[str]) -> None:
    if job_ids:
        _run(["scancel", *job_ids])


def queued_elements(array_ids: list[str]) -> set[str]:
    """Elements of these arrays still in the queue (pending or running), one per line (`-r`).
    An element cancelled before it started never reaches sacct: it is simply no longer here."""
    if not array_ids:
        return set()
    out = _run(["squeue", "-h", "-r", "-o", "%i", "-j", ",".join(array_ids)])
    return {line.strip() for line in out.splitlines() if line.strip()}
