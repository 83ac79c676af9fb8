"""What wirewise asks Slurm about nodes: the GPUs jobs hold on a node now, the GPUs one job
holds, the network's leaf switches, and node lists expanded into host names. Each query is one
command through the runner (wirewise.orchestrator.slurm.command); the parsers beside them take
the text, so tests feed them the formats seen on clusters.

    gpus_in_use(node)        `scontrol show node -d` (GresUsed=gpu:h200:2(IDX:0-1)), else per job
    gpus_in_use_on(nodes)    the same for many nodes from one `scontrol show node -d` (a fleet's)
    job_gpus(job, node)      `scontrol show job -d` (Nodes=gpu[01-02] ... GRES=gpu:2(IDX:0-1))
    leaf_switches()          `scontrol show topology` (SwitchName=... Nodes=...)
    slurm_nodes(partition, nodelist)   `sinfo -N`: each node's state with its flag, drain reason
                             (who set it, when), GPUs, features, partitions (SlurmNode)
    partition_nodes(nodes)   partition -> its nodes, from slurm_nodes()
    states_if_slurm(nodes)   the same, or {} where there is no Slurm to ask
    select_nodes(partition, nodelist, constraint)   the nodes a scope names, bad names refused
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from wirewise.errors import UserError
from wirewise.jobenv import hostnames
from wirewise.orchestrator.slurm.command import SlurmError, SlurmUnreachable, available, slurm
from wirewise.ranges import GPU_INDICES, parse_ranges

_GRES_USED = re.compile(r"GresUsed=(\S*)")
_INDICES = re.compile(r"gpu[^,(]*\(IDX:([^)]*)\)")
_JOB_NODE_GRES = re.compile(r"^\s*Nodes=(\S+) .*GRES=gpu[^(]*\(IDX:([^)]*)\)")
_SWITCH = re.compile(r"SwitchName=(\S+).*?\bNodes=(\S+)")


def used_from_scontrol(text: str) -> set[int]:
    """GPU indices in use from `scontrol show node -d` output (several GPU types, ranges, N/A)."""
    found = _GRES_USED.search(text)
    if not found:
        return set()
    used: set[int] = set()
    for spec in _INDICES.findall(found.group(1)):
        used |= set(_indices(spec))
    return used


def _indices(spec: str) -> list[int]:
    """'0-1,4' -> [0, 1, 4]; Slurm's 'N/A' (nothing held) -> []."""
    return [] if spec.strip() == "N/A" else parse_ranges(spec, GPU_INDICES, option="Slurm's IDX:")


def gpus_in_use(node: str) -> set[int] | None:
    """GPUs Slurm has handed out on `node`; None where there is no scontrol or Slurm does not
    know the node (a stored topology of a machine outside this cluster)."""
    shown = _ask_here("show", "node", "-d", node)
    if shown is None or f"NodeName={node} " not in shown:
        return None
    return _in_use(node, shown)


def gpus_in_use_on(nodes: list[str]) -> dict[str, set[int] | None]:
    """gpus_in_use of each node, from one `scontrol show node -d` of every node: placement across
    a fleet's 12,500 nodes asked once, not once a node (a process each: minutes)."""
    shown = _ask_here("show", "node", "-d")
    if shown is None:
        return dict.fromkeys(nodes)
    blocks = {}
    for block in shown.split("NodeName=")[1:]:
        name = block.split(None, 1)[0] if block.strip() else ""
        blocks[name] = f"NodeName={block}"
    return {node: (_in_use(node, blocks[node]) if node in blocks else None) for node in nodes}


def _in_use(node: str, shown: str) -> set[int]:
    """The GPUs in use on `node` from its `scontrol show node -d` text."""
    if "(IDX:" in shown:
        return used_from_scontrol(shown)
    # Untyped GRES (Gres=gpu:8) show only a count on the node: ask each job running there.
    used: set[int] = set()
    for job in slurm("squeue", "-h", "-w", node, "-t", "RUNNING", "-o", "%A").split():
        used |= set(job_gpus(job, node) or [])
    return used


def job_gpus(job_id: str, node: str | None = None) -> list[int] | None:
    """The GPU indices a running job holds (on `node`, or its first node), from `scontrol show
    job -d`; None while it holds none yet (or Slurm no longer knows the job)."""
    return gpus_of_job_from(slurm("scontrol", "show", "job", "-d", job_id, or_none=True) or "", node)


def gpus_of_job_from(text: str, node: str | None = None) -> list[int] | None:
    """`scontrol show job -d` -> the GPU indices on `node` (or the first node listed). Nodes
    given the same share one line, named by a node list (seen on 22.05 and 25.11):
    `Nodes=wwn[1-2] CPU_IDs=0 Mem=512 GRES=gpu:2(IDX:0-1)`."""
    for line in text.splitlines():
        found = _JOB_NODE_GRES.search(line)
        if found and (node is None or node in hostnames(found.group(1))):
            return sorted(_indices(found.group(2)))
    return None


def leaf_switches_from(text: str) -> dict[str, str]:
    """node -> its leaf switch from `scontrol show topology` output (the switches that list Nodes=)."""
    leaf_of = {}
    for switch, hostlist in _SWITCH.findall(text):
        for node in hostnames(hostlist):
            leaf_of[node] = switch
    return leaf_of


def leaf_switches() -> dict[str, str]:
    """node -> leaf switch on this cluster; {} without scontrol or a topology plugin."""
    shown = _ask_here("show", "topology")
    return leaf_switches_from(shown) if shown is not None else {}


def _ask_here(*args: str) -> str | None:
    """scontrol's answer; None where it says no, and where this machine is in no cluster (no
    scontrol, or no slurm.conf to find a controller by): placement then reads stored wirings
    alone. A configured client whose controller is silent still raises."""
    if not available("scontrol"):
        return None
    try:
        return slurm("scontrol", *args, or_none=True)
    except SlurmUnreachable as exc:
        if exc.unconfigured:
            return None
        raise


# -- the nodes of a partition, a node list or a feature ------------------------------------------
# sinfo's node states (sinfo(1), "NODE STATE CODES") after which a node takes no new job: it is
# down, drained or draining, failing, or in maintenance; a trailing '*' means it does not answer.
_NO_NEW_JOBS = ("down", "drain", "fail", "maint", "reboot", "inval", "future", "unknown", "boot")
_COUNT = re.compile(r"^gpu(?::[^:(]+)?:(\d+)")
# Every field a reader of nodes needs, asked in one `sinfo -N`: name, partition, long state with
# its flag, GRES, active features, who set the reason and when, the reason last (it may hold '|').
SINFO_FIELDS = "%N|%P|%T|%G|%b|%U|%H|%E"
# sinfo's long state names (%T) end in a flag: * not responding, ~ powered off, # powering up,
# ! powering down, % powered down, $ maintenance reservation, @ reboot pending, ^ rebooting, - planned.
_FLAGS = "*~#!%$@^-"
_NOT_SET = ("", "none", "(null)", "Unknown")  # sinfo names a user and a time even where no reason is set


@dataclass(frozen=True)
class SlurmNode:
    """One node as `sinfo -N` shows it (a node in several partitions is one line per partition)."""

    name: str
    state: str  # sinfo's long state without its flag, lower case: idle, mixed, drained, draining, down, ...
    flag: str  # the flag it ended in ('' none, '*' not responding, '~' powered off, ...: _FLAGS)
    gpus: int  # the GPUs of its GRES (every gpu type summed)
    features: tuple[str, ...]  # its active features
    partitions: tuple[str, ...]  # in sinfo's order, the default partition's '*' dropped
    reason: str | None = None  # None: no reason set
    reason_by: str | None = None  # who set the reason, as sinfo names them (root(0))
    reason_at: str | None = None

    @property
    def responding(self) -> bool:
        return "*" not in self.flag

    @property
    def drained(self) -> bool:
        """drained or draining (a drain is set)."""
        return "drain" in self.state

    @property
    def unavailable(self) -> str | None:
        """Why no new job should go there ('down', 'drained', 'not responding', ...); None: usable.
        The one rule for every reader of node states (scopes, placement, the health loop)."""
        words = re.split(r"[+~#!%$@^-]", self.state)
        reason = next((word for word in words if word.startswith(_NO_NEW_JOBS)), None)
        if not self.responding:
            return f"{reason}, not responding" if reason else "not responding"
        return reason

    @property
    def available(self) -> bool:
        return self.unavailable is None


def partition_nodes(nodes: dict[str, SlurmNode]) -> dict[str, list[str]]:
    """partition -> its nodes, from slurm_nodes()."""
    members: dict[str, list[str]] = {}
    for node in nodes.values():
        for partition in node.partitions:
            members.setdefault(partition, []).append(node.name)
    return {p: sorted(n) for p, n in sorted(members.items())}


def parse_sinfo(text: str) -> dict[str, SlurmNode]:
    """`sinfo -h -N -o SINFO_FIELDS` lines -> nodes by name, in sinfo's order; a node listed
    under several partitions is one node with all of them."""
    first: dict[str, list[str]] = {}
    partitions: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split("|", 7)
        if len(fields) != 8 or not fields[0].strip():
            continue
        fields = [f.strip() for f in fields]
        name, partition = fields[0], fields[1].rstrip("*")  # the default partition is marked with a '*'
        first.setdefault(name, fields)
        known = partitions.setdefault(name, [])
        if partition not in known:
            known.append(partition)
    return {name: _node(fields, tuple(partitions[name])) for name, fields in first.items()}


def _node(fields: list[str], partitions: tuple[str, ...]) -> SlurmNode:
    name, _, state, gres, features, user, when, reason = fields
    flag = state[len(state.rstrip(_FLAGS)):]
    reason = None if reason in _NOT_SET else reason
    return SlurmNode(name, state[:len(state) - len(flag)].lower(), flag, gpu_count(gres), _words(features), partitions,
                     reason, user if reason and user not in _NOT_SET else None,
                     when if reason and when not in _NOT_SET else None)


def gpu_count(gres: str) -> int:
    """GPUs in a GRES string: 'gpu:4', 'gpu:a100:4(S:0-1)', 'gpu:a100:2,gpu:v100:2,nic:1' -> 4, 4, 4."""
    total = 0
    for entry in re.split(r",(?![^(]*\))", gres):
        found = _COUNT.match(entry.strip())
        total += int(found.group(1)) if found else 0
    return total


def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in text.split(",") if w and w != "(null)")


def slurm_nodes(partition: str | None = None, nodelist: str | None = None) -> dict[str, SlurmNode]:
    """The nodes of a partition and/or a node list (every node without either), by name, from
    one sinfo call."""
    args = ["-h", "-N", "-o", SINFO_FIELDS]
    if partition:
        args += ["-p", partition]
    if nodelist:
        args += ["-n", nodelist]
    return parse_sinfo(slurm("sinfo", *args) or "")


def states_if_slurm(nodes: list[str] | None = None, partition: str | None = None) -> dict[str, SlurmNode]:
    """slurm_nodes(), or {} where this machine has no Slurm (no sinfo, or no controller answers:
    a laptop placing on stored wirings)."""
    if not available("sinfo") or nodes == []:
        return {}
    try:
        return slurm_nodes(partition, ",".join(nodes) if nodes else None)
    except SlurmError:
        return {}


def select_nodes(partition: str | None, nodelist: str | None, constraint: str | None,
                 labels: dict[str, str] | None = None) -> list[SlurmNode]:
    """The nodes a scope names: in the partition, on the node list, with the features the
    constraint asks for, from one sinfo call (with a node list, the partition is filtered here
    so that a name in another partition is told apart from one Slurm does not know). Names
    Slurm does not know, a partition without nodes and a feature no node has are one UserError
    line each, named as the person wrote them (`labels`)."""
    labels = labels or {}
    found = slurm_nodes(None if nodelist else partition, nodelist)
    nodes = list(found.values())
    if nodelist:
        unknown = [name for name in hostnames(nodelist) if name not in found]
        if unknown:
            raise UserError(f"{labels.get('nodelist', 'nodelist')} {nodelist}: Slurm knows no node {', '.join(unknown[:5])}"
                            f"{' ...' if len(unknown) > 5 else ''} (`sinfo -N` lists them)")
        if partition:
            named = partition.split(",")  # as `sinfo -p` would: only the named partitions
            nodes = [replace(node, partitions=tuple(p for p in node.partitions if p in named)) for node in nodes
                     if set(named) & set(node.partitions)]
    if not nodes:
        if nodelist and partition:
            raise UserError(f"{labels.get('nodelist', 'nodelist')} {nodelist}: none of these nodes is in partition {partition}")
        raise UserError(f"{labels.get('partition', 'partition')} {partition}: no such partition, or it has no nodes "
                        "(`sinfo -s` lists them)" if partition else "Slurm lists no nodes here (`sinfo -N`)")
    if constraint:
        wanted = Constraint.parse(constraint, labels.get("constraint", "constraint"))
        matching = [node for node in nodes if wanted.holds(set(node.features))]
        if not matching:
            have = sorted({f for node in nodes for f in node.features})
            raise UserError(f"{labels.get('constraint', 'constraint')} {constraint}: no node has it "
                            f"(their features: {', '.join(have[:12]) or 'none'})")
        nodes = matching
    return nodes


@dataclass(frozen=True)
class Constraint:
    """A --constraint expression as a filter on node features: names joined by '&' (and ','),
    '|', grouped by ( ) or [ ], '!' for not. Counts (a*2) are about a job's nodes, not one
    node's features: refused."""

    tokens: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, label: str = "constraint") -> Constraint:
        if "*" in text:
            raise UserError(f"{label} {text}: a count (*N) asks for N nodes with a feature; as a node filter give features only")
        tokens = tuple(t for t in re.split(r"([&|,()\[\]!])", text) if t)
        constraint = cls(tokens)
        try:
            position = constraint._either(0, set())[1]
        except IndexError:
            position = -1
        if position != len(tokens):
            raise UserError(f"{label} {text}: not a constraint expression such as a100&ib or [rack1|rack2]")
        return constraint

    def holds(self, features: set[str]) -> bool:
        return self._either(0, features)[0]

    # A small recursive descent: either := both ('|' both)*; both := one (('&'|',') one)*;
    # one := '!' one | '(' either ')' | '[' either ']' | feature. Returns (value, next position).
    def _either(self, at: int, features: set[str]) -> tuple[bool, int]:
        value, at = self._both(at, features)
        while at < len(self.tokens) and self.tokens[at] == "|":
            other, at = self._both(at + 1, features)
            value = value or other
        return value, at

    def _both(self, at: int, features: set[str]) -> tuple[bool, int]:
        value, at = self._one(at, features)
        while at < len(self.tokens) and self.tokens[at] in "&,":
            other, at = self._one(at + 1, features)
            value = value and other
        return value, at

    def _one(self, at: int, features: set[str]) -> tuple[bool, int]:
        token = self.tokens[at]
        if token == "!":
            value, at = self._one(at + 1, features)
            return not value, at
        if token in "([":
            value, at = self._either(at + 1, features)
            if self.tokens[at] != {"(": ")", "[": "]"}[token]:
                raise IndexError(at)
            return value, at + 1
        if token in "&|,)]":
            raise IndexError(at)
        return token in features, at + 1
