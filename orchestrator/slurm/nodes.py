"""What wirewise asks Slurm about nodes: the GPUs jobs hold on a node now, the GPUs one job
holds, the network's leaf switches, and node lists expanded into host names. Each query is one
command through the runner (wirewise.orchestrator.slurm.command); the parsers beside them take
the text, so tests feed them the formats seen on clusters.

    gpus_in_use(node)        `scontrol show node -d` (GresUsed=gpu:h200:2(IDX:0-1)), else per job
    job_gpus(job, node)      `scontrol show job -d` (Nodes=gpu01 ... GRES=gpu:2(IDX:0-1))
    leaf_switches()          `scontrol show topology` (SwitchName=... Nodes=...)
    hostnames("gpu[01-04]")  submitit's node-list parser, bounded before it expands
"""

from __future__ import annotations

import re

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.command import available, slurm
from wirewise.ranges import GPU_INDICES, parse_ranges

_GRES_USED = re.compile(r"GresUsed=(\S*)")
_INDICES = re.compile(r"gpu[^,(]*\(IDX:([^)]*)\)")
_JOB_NODE_GRES = re.compile(r"^\s*Nodes=(\S+) .*GRES=gpu[^(]*\(IDX:([^)]*)\)")
_SWITCH = re.compile(r"SwitchName=(\S+).*?\bNodes=(\S+)")
# More names than any cluster has (the largest run about 10,000 nodes): a node list past this
# is refused before it is expanded.
MAX_HOSTS = 65536


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
    if not available("scontrol"):
        return None
    shown = slurm("scontrol", "show", "node", "-d", node, or_none=True)
    if shown is None or f"NodeName={node} " not in shown:
        return None
    if "(IDX:" in shown:
        return used_from_scontrol(shown)
    # Untyped GRES (Gres=gpu:8) show only a count on the node: ask each job running there.
    used: set[int] = set()
    for job in slurm("squeue", "-h", "-w", node, "-t", "RUNNING", "-o", "%A").split():
        used |= set(job_gpus(job, node) or [])
    return used


def job_gpus(job_id: str, node: str | None = None) -> list[int] | None:
    """The GPU indices a running job holds (on `node`, or its first node), from `scontrol show
    job -d`'s `Nodes=vm ... GRES=gpu:2(IDX:0-1)` lines; None while it holds none yet (or
    Slurm no longer knows the job)."""
    shown = slurm("scontrol", "show", "job", "-d", job_id, or_none=True) or ""
    for line in shown.splitlines():
        found = _JOB_NODE_GRES.search(line)
        if found and (node is None or found.group(1) == node):
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
    if not available("scontrol"):
        return {}
    shown = slurm("scontrol", "show", "topology", or_none=True)
    return leaf_switches_from(shown) if shown is not None else {}


def hostnames(hostlist: str) -> list[str]:
    """'gpu[01-03],cpu7' -> ['gpu01', 'gpu02', 'gpu03', 'cpu7'] by submitit's parser (what its
    JobEnvironment reads SLURM_JOB_NODELIST with), after counting the names without expanding."""
    from submitit.slurm.slurm import SlurmParseException, _parse_node_list

    if _host_count(hostlist) > MAX_HOSTS:
        raise UserError(f"node list {hostlist[:60]!r} names more than {MAX_HOSTS} nodes")
    try:
        return _parse_node_list(hostlist)
    except SlurmParseException:
        raise UserError(f"{hostlist[:60]!r} is not a Slurm node list such as gpu[01-04],gpu07") from None


def _host_count(hostlist: str) -> int:
    """How many names a node list expands to: per comma-separated group (commas inside brackets
    belong to the brackets), the product of its brackets' sizes."""
    total = 0
    for group in re.split(r",(?![^\[]*\])", hostlist):
        count = 1
        for body in re.findall(r"\[([^\]]*)\]", group):
            count *= sum(_span(part) for part in body.split(","))
        total += count
    return total


def _span(part: str) -> int:
    low, _, high = part.partition("-")
    if not (low.isdigit() and (high or low).isdigit()):
        return 1  # not a range: submitit's parser says what is wrong with it
    if len(low) > 9 or len(high) > 9:
        return MAX_HOSTS + 1  # 10^9 names or more
    return max(0, int(high or low) - int(low) + 1)
