"""CPU lists ("0-47,96-143", read and written by wirewise.ranges) and Slurm's logical core indices.

nvidia-smi prints a GPU's CPU affinity as CPU (hardware thread) ids. gres.conf `Cores=`
wants *logical core indices* instead: core 0 is the first core of the first socket, and
a core's hyperthread siblings are not listed (gres.conf(5), "Cores"). On Linux x86 the
second threads of all cores usually come after the first threads of all cores, so
"0-47,96-143" on a 192-thread machine is cores 0-47.
"""

from __future__ import annotations

from pathlib import Path

from wirewise.errors import UserError
from wirewise.ranges import CPU_IDS, parse_ranges

SYSFS_CPUS = Path("/sys/devices/system/cpu")


def cpus_from_mask(words, bits_per_word: int = 64) -> list[int]:
    """NVML's CPU affinity (an array of bit masks, lowest CPUs first) -> CPU ids."""
    return [w * bits_per_word + b for w, word in enumerate(words) for b in range(bits_per_word) if int(word) >> b & 1]


def fold_siblings_by_offset(affinities: list[list[int]]) -> list[list[int]] | None:
    """Logical cores from CPU lists alone: when every non-empty list is a lower half plus the
    same half shifted by one common offset past a gap (the sibling threads), keep the lower halves.
    None when the lists show no such pattern (then the machine's threads are unknown)."""
    offsets = set()
    halves = []
    for cpus in affinities:
        if not cpus:
            halves.append([])
            continue
        if len(cpus) % 2:
            return None
        low, high = cpus[: len(cpus) // 2], cpus[len(cpus) // 2 :]
        offset = high[0] - low[0]
        # A gap between the halves is the evidence: "0-191" alone could be 192 cores.
        if high[0] <= low[-1] + 1 or [c + offset for c in low] != high:
            return None
        offsets.add(offset)
        halves.append(low)
    return halves if len(offsets) == 1 else None


def core_indices(sysfs: Path = SYSFS_CPUS) -> dict[int, int] | None:
    """Slurm's logical core index of every CPU on this machine, from the kernel's thread-sibling
    lists: a core is named by its first thread, cores are ranked by it. None when unreadable.
    Read once per probe: a 192-thread machine has 192 of these files."""
    first_thread: dict[int, int] = {}
    for topo in sysfs.glob("cpu[0-9]*/topology/thread_siblings_list"):
        cpu = int(topo.parent.parent.name[3:])
        try:
            first_thread[cpu] = min(parse_ranges(topo.read_text(), CPU_IDS))
        except (OSError, ValueError, UserError):  # unreadable, or not a CPU list
            return None
    rank = {core: k for k, core in enumerate(sorted(set(first_thread.values())))}
    return {cpu: rank[first] for cpu, first in first_thread.items()} or None


def logical_cores(cpus: list[int], core_of: dict[int, int] | None) -> list[int] | None:
    """The logical core indices of these CPUs; None when a CPU is not in the map."""
    if not core_of or not cpus or any(c not in core_of for c in cpus):
        return None
    return sorted({core_of[c] for c in cpus})
