"""The scheduler's environment, read in one place for both sides: the Slurm job and step, its
nodes and this node's place among them, the ranks a launcher started, and the GPUs this
process may use, by their physical index. submitit's JobEnvironment is the one reader of
Slurm's variables for submitit; this is wirewise's, and nothing else reads them.

    read_job_env(env=None) -> JobEnv        the job this process runs in (None-valued outside one)
    JobEnv.physical_gpus() -> [int] | None  CUDA_VISIBLE_DEVICES as nvidia-smi's indices
    JobEnv.device_ids(planned) -> [str]     the entries that show a command the planned GPUs
    hostnames("gpu[01-04]")                 a node list's names as Slurm expands it, counted before it expands
    hostlist(["gpu01", "gpu02"])            the other way: "gpu[01-02]"

What each variable means (sbatch(1) and srun(1), "OUTPUT ENVIRONMENT VARIABLES", Slurm 25.11):
- SLURM_JOB_ID names the job; SLURM_STEP_ID is set inside an srun step and unset in the batch
  script and salloc's shell (seen on 22.05); SLURM_RESTART_COUNT counts requeues.
- The nodes: SLURM_STEP_NODELIST inside a step (a step may run on some of the job's nodes),
  else SLURM_JOB_NODELIST, node 0 first; SLURM_NODEID is this node's place among them, and
  SLURMD_NODENAME its name as Slurm knows it (sinfo, drains), which may differ from the host
  name.
- The GPUs: SLURM_STEP_GPUS inside a step, else SLURM_JOB_GPUS, hold the node's own indices,
  "not relative to any device cgroup". SLURM_JOB_GPUS is "only set in batch and interactive
  jobs": an srun step on another node inherits the batch node's value, so inside a step only
  SLURM_STEP_GPUS speaks for this node.
- CUDA_VISIBLE_DEVICES names them as CUDA must see them, in one of three ways: the node's
  indices (no device cgroup), positions among the job's GPUs (ConstrainDevices renumbers them
  from 0), or UUIDs (recent Slurm, docs/facts.md). CUDA's rules (CUDA Programming Guide, "CUDA
  Environment Variables"): a UUID may be abbreviated to a prefix that names one GPU
  (`GPU-8932f937`); a MIG instance is `MIG-<its UUID>` or `MIG-<GPU UUID>/<GI>/<CI>`; an entry
  that is neither hides itself and every entry after it (`-1`, and Slurm's `NoDevFiles`).
- The ranks: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK, as torchrun,
  accelerate launch and wirewise.jobs.supervise set them.

Physical index means nvidia-smi's (PCI bus order), which plans, gres.conf (`wirewise topo
slurm` writes it in that order) and the store use. UUIDs are matched through NVML, whose
index is nvidia-smi's and stays the node's inside a job: nvmlDeviceGetCount_v2 counts the
GPUs a cgroup hides, only their handles are refused (NVML API reference). Numbers are mapped
through Slurm's list, never by position alone where the list says otherwise.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import socket
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from wirewise.errors import UserError
from wirewise.limits import MAX_NODES, MAX_RANKS

UuidLookup = Callable[[], dict[str, int]]  # UUID of a GPU or MIG instance -> its GPU's physical index
_CPUS = re.compile(r"(\d+)(?:\(x(\d+)\))?")
_UUID_PREFIXES = ("GPU-", "MIG-")
_JOB_ID = re.compile(r"[0-9]{1,20}")


@dataclass(frozen=True)
class Ranks:
    """Where this process is among the ranks a launcher started (rank and local rank None where
    only the sizes are set)."""

    rank: int | None
    world_size: int
    local_rank: int | None
    local_world_size: int

    @property
    def nodes(self) -> int:
        """How many nodes the ranks span, every node running local_world_size of them."""
        return max(1, self.world_size // self.local_world_size)


@dataclass(frozen=True)
class JobEnv:
    job_id: str | None  # SLURM_JOB_ID; None outside Slurm
    step_id: str | None  # SLURM_STEP_ID: inside an srun step (not the batch script or salloc's shell)
    restart_count: str  # SLURM_RESTART_COUNT: a requeued job keeps its id and counts this up
    nodes: list[str]  # the step's (else the job's) nodes, node 0 first; [] outside Slurm
    node_index: int  # this node's place among them (SLURM_NODEID)
    node_name: str  # this node as Slurm names it (SLURMD_NODENAME), else the host's short name
    cpus_per_node: int | None  # the fewest CPUs the job holds on any of its nodes
    visible: list[str] | None  # CUDA_VISIBLE_DEVICES entries; None where unset (every GPU visible)
    slurm_gpus: list[int] | None  # this node's GPUs by their physical index, as Slurm gave them
    ranks: Ranks | None  # set inside ranks a launcher started

    @property
    def in_slurm(self) -> bool:
        return self.job_id is not None

    @property
    def in_step(self) -> bool:
        return self.step_id is not None

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    @property
    def step_port(self) -> int:
        """The rendezvous port of a Slurm job step: every node of the step derives the same one
        from the job and step ids (no side channel), and two steps of one job get different ones."""
        return 20000 + zlib.crc32(f"{self.job_id or '0'}.{self.step_id or '0'}".encode()) % 20000

    @property
    def step_key(self) -> str | None:
        """What names one run of a Slurm job step on every node of it: the job, the step and the
        run. None outside Slurm."""
        if self.job_id is None:
            return None
        return f"{self.job_id}.{self.step_id or '0'}.{self.restart_count}"

    def physical_gpus(self, uuids: UuidLookup | None = None) -> list[int] | None:
        """The physical index of each CUDA_VISIBLE_DEVICES entry, in its order (CUDA's device
        k is entry k); None where nothing restricts the GPUs (CUDA's numbers are then nvidia-smi's
        under CUDA_DEVICE_ORDER=PCI_BUS_ID). `uuids` is for tests: NVML's table by default."""
        if self.visible is None:
            return None
        if all(v.isdigit() for v in self.visible):
            return _physical_of_numbers([int(v) for v in self.visible], self.slurm_gpus)
        if not any(v.isdigit() for v in self.visible):
            return _physical_of_uuids(self.visible, uuids)
        raise UserError(f"CUDA_VISIBLE_DEVICES={','.join(self.visible)!r} mixes GPU indices and UUIDs: give one or the other")

    def device_ids(self, planned: list[int], uuids: UuidLookup | None = None) -> list[str] | None:
        """The CUDA_VISIBLE_DEVICES entries for the planned physical GPUs, as this job names them;
        None where the physical indices are the names (nothing restricts the GPUs)."""
        if not planned or self.visible is None:
            return None
        physical = self.physical_gpus(uuids)
        position = {gpu: i for i, gpu in enumerate(physical)}
        missing = [gpu for gpu in planned if gpu not in position]
        if missing:
            raise UserError(
                f"planned GPUs {missing} are not among this job's GPUs {physical}: "
                "the job must hold the whole node (--exclusive with every GPU)"
            )
        return [self.visible[position[gpu]] for gpu in planned]

    def visible_devices(self, planned: list[int], uuids: UuidLookup | None = None) -> str:
        """The CUDA_VISIBLE_DEVICES value that shows a command the planned physical GPUs, as this
        job names them (device_ids), or by their indices where nothing restricts them."""
        return ",".join(self.device_ids(planned, uuids) or map(str, planned))


def read_job_env(env: Mapping[str, str] | None = None) -> JobEnv:
    """The job this process runs in, from its environment (os.environ by default)."""
    env = os.environ if env is None else env
    job_id = _job_id(env)
    step_id = env.get("SLURM_STEP_ID") if job_id else None
    nodelist = (env.get("SLURM_STEP_NODELIST") if step_id is not None else None) or env.get("SLURM_JOB_NODELIST")
    return JobEnv(
        job_id=job_id,
        step_id=step_id,
        restart_count=env.get("SLURM_RESTART_COUNT") or "0",
        nodes=hostnames(nodelist) if job_id and nodelist else [],
        node_index=(_number(env, "SLURM_NODEID", MAX_NODES - 1) or 0) if job_id else 0,
        node_name=env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0],
        cpus_per_node=fewest_cpus(env.get("SLURM_JOB_CPUS_PER_NODE", "")),
        visible=_visible(env["CUDA_VISIBLE_DEVICES"]) if "CUDA_VISIBLE_DEVICES" in env else None,
        slurm_gpus=_slurm_gpus(env, step_id is not None) if job_id else None,
        ranks=_ranks(env),
    )


def fewest_cpus(text: str) -> int | None:
    """'16(x2),8' -> 8; '' or an unknown form -> None."""
    counts = []
    for part in text.split(","):
        found = _CPUS.fullmatch(part.strip())
        if not found:
            return None
        counts.append(int(found.group(1)))
    return min(counts) if counts else None


def hostnames(hostlist: str) -> list[str]:
    """'gpu[01-03],cpu7' -> ['gpu01', 'gpu02', 'gpu03', 'cpu7'], as Slurm 25.11's `scontrol show
    hostnames` expands a node list: in its order (duplicates kept), a range as wide as its first
    number (`n[08-10]` -> n08 n09 n10, `n[8-010]` -> n8 n9 n10), several brackets in one name
    multiplied and text after a bracket kept (`a[1-2]-b[3-4]`, `node[1-2]-ib`), empty names
    skipped (`a,,b`). Counted before anything is expanded: more than MAX_NODES names is a
    UserError, as is a list Slurm refuses (`x[5-3]`, `x[]`, `x[1-2`).

    wirewise's own parser, held to Slurm's output by tests/slurm/test_commands.py: submitit has
    one, but private (`_parse_node_list`; its public JobEnvironment.hostnames reads only this
    process's SLURM_JOB_NODELIST), and `scontrol show hostnames` would be a Slurm command in the
    contract and a process per list (the control plane reads one per sinfo line)."""
    groups = _node_groups(hostlist)
    if _name_count(groups) > MAX_NODES:
        raise UserError(f"node list {hostlist[:60]!r} names more than {MAX_NODES} nodes")
    return ["".join(parts) for group in groups
            for parts in itertools.product(*([text] if isinstance(text, str) else _numbers(text) for text in group))]


def host_count(hostlist: str) -> int:
    """How many names a node list expands to (hostnames), counted without expanding them."""
    return _name_count(_node_groups(hostlist))


def hostlist(names: list[str]) -> str:
    """hostnames() the other way: ['gpu01', 'gpu02', 'gpu04', 'cpu7'] -> 'cpu7,gpu[01-02,04]'
    (names sorted, consecutive numbers of one prefix and width folded into ranges)."""
    groups: dict[tuple[str, int], list[int]] = {}
    parts = []
    for name in sorted(set(names)):
        found = re.fullmatch(r"(.*?)(\d+)", name)
        if found:
            groups.setdefault((found.group(1), len(found.group(2))), []).append(int(found.group(2)))
        else:
            parts.append(name)
    for (prefix, width), numbers in groups.items():
        runs: list[list[int]] = []
        for n in sorted(numbers):
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        spans = [f"{r[0]:0{width}d}" + (f"-{r[-1]:0{width}d}" if len(r) > 1 else "") for r in runs]
        parts.append(f"{prefix}{spans[0]}" if len(numbers) == 1 else f"{prefix}[{','.join(spans)}]")
    return ",".join(sorted(parts))


# ------------------------------------------------------------------------ the pieces


# A node list's names: per comma-separated name, its parts in order, each a text or a bracket's
# ranges (first, last, width), e.g. 'a[1-2]-ib' -> [['a', [(1, 2, 1)], '-ib']].
Group = list[str | list[tuple[int, int, int]]]
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"(\d{1,18})(?:-(\d{1,18}))?")  # past 10^18: no node list, and int() stays cheap


def _node_groups(hostlist: str) -> list[Group]:
    def refused() -> UserError:
        return UserError(f"{hostlist[:60]!r} is not a Slurm node list such as gpu[01-04],gpu07")

    groups = []
    for name in re.split(r",(?![^\[]*\])", hostlist.strip()):  # a comma inside brackets is the bracket's
        pieces = _BRACKET.split(name.strip())  # text, ranges, text, ...
        texts = pieces[0::2]
        if any(c in text for text in texts for c in "[] \t"):
            raise refused()
        group: Group = []
        for index, piece in enumerate(pieces):
            if index % 2 == 0:
                group += [piece] if piece else []
                continue
            spans = [_RANGE.fullmatch(part) for part in piece.split(",")]
            if not all(spans) or any(span[2] is not None and int(span[2]) < int(span[1]) for span in spans):
                raise refused()
            group.append([(int(span[1]), int(span[2] or span[1]), len(span[1])) for span in spans])
        if group:
            groups.append(group)
    return groups


def _name_count(groups: list[Group]) -> int:
    return sum(math.prod(1 if isinstance(part, str) else sum(last - first + 1 for first, last, _ in part)
                         for part in group) for group in groups)


def _numbers(ranges: list[tuple[int, int, int]]) -> list[str]:
    return [f"{n:0{width}d}" for first, last, width in ranges for n in range(first, last + 1)]


def visible_indices(env: Mapping[str, str], count: int) -> list[int] | None:
    """The GPU indices devices 0..count-1 are under the CUDA_VISIBLE_DEVICES of `env` (a command
    line's, as a log shows it): entry k for device k, 0..count-1 where it is unset; None where
    it lists fewer, or names GPUs by UUID or MIG name, or by an index past any node's."""
    from wirewise.limits import MAX_GPU_INDEX

    if count > MAX_GPU_INDEX + 1:
        return None
    if "CUDA_VISIBLE_DEVICES" not in env:
        return list(range(count))
    entries = _visible(env["CUDA_VISIBLE_DEVICES"])[:count]
    if len(entries) < count or not all(e.isdigit() and len(e) <= 5 and int(e) <= MAX_GPU_INDEX for e in entries):
        return None
    return [int(e) for e in entries]


def _visible(text: str) -> list[str]:
    """CUDA_VISIBLE_DEVICES' entries up to the first CUDA takes for no GPU (it hides the rest)."""
    found = []
    for entry in (v.strip() for v in text.split(",")):
        if not (entry.isdigit() or entry.startswith(_UUID_PREFIXES)):
            break
        found.append(entry)
    return found


def _number(env: Mapping[str, str], name: str, most: int) -> int | None:
    """A count or index the scheduler or launcher set: None where unset or empty; UserError for
    anything but a whole number from 0 to `most` (SLURM_NODEID=abc, WORLD_SIZE of 20 digits),
    never read as 0 or expanded into a list of that many."""
    value = env.get(name, "").strip()
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 9 or int(value) > most:
        raise UserError(f"{name}={value[:40]!r} in the environment: not a whole number from 0 to {most}; "
                        "unset it, or run under the launcher or scheduler that sets it")
    return int(value)


def _job_id(env: Mapping[str, str]) -> str | None:
    """SLURM_JOB_ID: Slurm's ids are numbers (an array task's and a heterogeneous component's
    too: SLURM_ARRAY_*, SLURM_HET_* say which); it names run folders, so nothing else is taken."""
    value = env.get("SLURM_JOB_ID") or None
    if value is not None and not _JOB_ID.fullmatch(value):
        raise UserError(f"SLURM_JOB_ID={value[:40]!r} in the environment: not a Slurm job id (a number); "
                        "unset it outside a Slurm job")
    return value


def _slurm_gpus(env: Mapping[str, str], in_step: bool) -> list[int] | None:
    """This node's GPUs as Slurm gave them: the step's inside a step (SLURM_JOB_GPUS there may be
    another node's, inherited from the batch script), else the job's."""
    from wirewise.ranges import GPU_INDICES, parse_ranges

    name = "SLURM_STEP_GPUS" if in_step else "SLURM_JOB_GPUS"
    text = env.get(name, "")
    if not text.strip() and in_step:
        return None  # a step without GPUs of its own: the job's value names the batch node's
    if not text.strip():
        return None
    return parse_ranges(text, GPU_INDICES, option=name)


def _ranks(env: Mapping[str, str]) -> Ranks | None:
    """The launcher's rank variables; None outside ranks (no world size, or no ranks per node)."""
    rank, world, local, per_node = (_number(env, name, MAX_RANKS) for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))
    if world is None or not per_node:
        return None
    if per_node > world:
        raise UserError(f"LOCAL_WORLD_SIZE={per_node} is more than WORLD_SIZE={world}: the launcher's ranks cannot be that")
    return Ranks(rank, world, local, per_node)


def _physical_of_numbers(numbers: list[int], slurm_gpus: list[int] | None) -> list[int]:
    """Numbered entries: the node's indices where Slurm constrains nothing (they are Slurm's own
    list), else positions among Slurm's GPUs (a device cgroup renumbers them from 0, in PCI bus
    order as Slurm's list is). Without Slurm's list the numbers are the indices."""
    if not slurm_gpus or set(numbers) <= set(slurm_gpus) and not _renumbered(numbers, slurm_gpus):
        return numbers
    ordered = sorted(slurm_gpus)
    outside = [n for n in numbers if n >= len(ordered)]
    if outside:
        raise UserError(f"CUDA_VISIBLE_DEVICES names GPU {outside[0]}, which is neither one of this job's GPUs "
                        f"{ordered} (SLURM_JOB_GPUS/SLURM_STEP_GPUS) nor a position among them")
    return [ordered[n] for n in numbers]


def _renumbered(numbers: list[int], slurm_gpus: list[int]) -> bool:
    """Whether numbers are positions among Slurm's GPUs rather than its indices. All of Slurm's
    list is what Slurm sets without a device cgroup: indices. A number past the list's length
    cannot be a position. Numbers that could be either (GPUs 1,2 given, `1` set by the job
    itself) are positions where a device cgroup is in force, which NVML shows by opening only
    the job's GPUs, and where NVML opens none (no driver here to tell)."""
    if sorted(numbers) == sorted(slurm_gpus) or any(n >= len(slurm_gpus) for n in numbers):
        return False
    from wirewise.nvml import gpu_uuids

    openable = set(gpu_uuids().values())
    return not openable or openable <= set(slurm_gpus)


def _physical_of_uuids(visible: list[str], uuids: UuidLookup | None) -> list[int]:
    """UUID entries by NVML's table; a unique prefix is matched as CUDA matches it."""
    if uuids is None:
        from wirewise.nvml import gpu_uuids as uuids
    table = uuids()
    found = []
    for entry in visible:
        key = entry.removeprefix("MIG-").split("/")[0] if entry.startswith("MIG-GPU-") else entry  # pre-R470 MIG-GPU-<its GPU's UUID>/<GI>/<CI>
        matches = {table[key]} if key in table else {i for uuid, i in table.items() if uuid.startswith(key)}
        if len(matches) != 1:
            listed = "NVML does not list it" if not matches else "it matches more than one GPU"
            raise UserError(f"cannot match CUDA_VISIBLE_DEVICES entry {entry!r} to a GPU ({listed})")
        found.append(matches.pop())
    return found
