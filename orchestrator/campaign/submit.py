"""Stage "submit", for campaigns: a plan into bundles, bundles into arrays, with the job every
element asks for; the executor (wirewise.orchestrator.executor) sends them.

Benchmarks need the node to themselves and the GPUs they were planned for, so an array
element holds a whole node (exclusive, every GPU, all its memory) and runs a bundle of
`target.tasks_per_element` tasks one after another (wirewise.orchestrator.campaign.bundle). A
multi-node task is an element of its own, on `target.nodes` nodes with one supervisor each.
Arrays are split into chunks of at most the executor's array limit (Slurm's MaxArraySize),
each numbered from 0 (the limit is on the index). Tasks pinned to nodes (a fleet campaign's,
a pair test's) are bundled per node set, and each of their arrays asks for those nodes
(`--nodelist`) with every GPU Slurm says they have. No user string reaches a shell: submitit
gets an argument list, and the job request holds its values to Slurm's character sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wirewise.orchestrator.campaign.bundle import Attempt
from wirewise.orchestrator.campaign.folder import CampaignFolder
from wirewise.orchestrator.campaign.spec import Target
from wirewise.errors import UserError
from wirewise.orchestrator.executor.core import Executor, JobRequest, Node, Scope

# What a person wrote for each value of the job request: errors name it.
SPEC_LABELS = {"name": "name", "time_min": "target.time", "nodes": "target.nodes", "partition": "target.partition",
               "account": "target.account", "qos": "target.qos", "constraint": "target.constraint",
               "nodelist": "target.nodelist", "reservation": "target.reservation", "parallelism": "target.array_parallelism",
               "folder": "the campaign folder (target.folder, or under WIREWISE_RUNS)"}


@dataclass(frozen=True)
class Pin:
    """Where a pinned task's elements go: these nodes, with every GPU Slurm says they have."""

    hosts: tuple[str, ...]
    gpus_per_node: int | None = None
    partition: str | None = None  # the target's, else a partition every one of the nodes is in

    @classmethod
    def on(cls, hosts: tuple[str, ...], nodes: dict[str, Node], partition: str | None) -> Pin:
        known = [nodes[host] for host in hosts if host in nodes]
        if partition is None and known:
            shared = [p for p in known[0].partitions if all(p in node.partitions for node in known[1:])]
            partition = shared[0] if shared else None
        return cls(tuple(hosts), min((node.gpus for node in known), default=0) or None, partition)


@dataclass
class Submission:
    """What one submission sends: bundles, split into arrays, each with the job its elements ask for."""

    bundles: list[list[Attempt]]
    arrays: list[range]  # bundle indices per array (each array's elements are numbered from 0)
    parameters: dict[str, Any]  # the executor's own form of the request (submitit's update_parameters), the first array's
    request: JobRequest
    max_array_size: int | None = None  # the limit the arrays were split by
    requests: list[JobRequest] = field(default_factory=list)  # per array, where they differ (pinned tasks)

    def request_of(self, array: int) -> JobRequest:
        return self.requests[array] if self.requests else self.request

    def to_json(self) -> dict[str, Any]:
        shown = {
            "bundles": len(self.bundles),
            "tasks": sum(len(b) for b in self.bundles),
            "array_elements": [len(a) for a in self.arrays],  # elements per array, in submission order
            "max_array_size": self.max_array_size,
            "parameters": self.parameters,
        }
        if self.requests:
            shown["pinned"] = len({r.nodelist for r in self.requests if r.nodelist})  # node sets with arrays of their own
        return shown


def make_bundles(runs: list[Attempt], target: Target) -> list[list[Attempt]]:
    size = 1 if target.nodes > 1 else target.tasks_per_element
    return [runs[i : i + size] for i in range(0, len(runs), size)]


def job_request(target: Target, name: str, gpus_per_node: int | None, root: Path) -> JobRequest:
    """The job every element of the campaign asks for: whole nodes of the target."""
    constraint = "&".join(c for c in (target.constraint, target.fabric, fingerprint_feature(target.fingerprint)) if c)
    return JobRequest(
        folder=CampaignFolder(root).submitit, name=f"wirewise-{name}", time_min=target.time_minutes, nodes=target.nodes,
        tasks_per_node=1, whole_node=True, gpus_per_node=gpus_per_node or None, partition=target.partition,
        account=target.account, qos=target.qos, constraint=constraint or None, nodelist=target.nodelist, reservation=target.reservation,
        parallelism=target.array_parallelism, requeue=False, labels=SPEC_LABELS,
    )


def fingerprint_feature(fingerprint: str | None) -> str | None:
    """The node feature `wirewise topo slurm` writes for a wiring: fp-<first 12 hex digits>."""
    return f"fp-{fingerprint[:12]}" if fingerprint else None


def prepare(runs: list[Attempt], target: Target, request: JobRequest, executor: Executor, dry_run: bool = False,
            pins: dict[str, Pin] | None = None) -> Submission:
    """Bundles and arrays for the runs; with `pins` (task id -> Pin), one set of arrays per
    node set, each asking for its nodes."""
    limit = executor.array_limit(dry_run)
    groups: dict[Pin | None, list[Attempt]] = {}
    for run in runs:
        groups.setdefault((pins or {}).get(run[0]), []).append(run)
    bundles: list[list[Attempt]] = []
    arrays: list[range] = []
    requests: list[JobRequest] = []
    for pin, pinned in groups.items():
        start = len(bundles)
        bundles += make_bundles(pinned, target)
        step = limit or len(bundles) - start or 1
        own = request if pin is None else replace(request, nodelist=",".join(pin.hosts), gpus_per_node=pin.gpus_per_node,
                                                 partition=pin.partition)
        for i in range(start, len(bundles), step):
            arrays.append(range(i, min(i + step, len(bundles))))
            requests.append(own)
    parameters = executor.parameters(requests[0] if requests else request)
    return Submission(bundles, arrays, parameters, request, limit, requests if pins else [])


def check_room(executor: Executor, request: JobRequest) -> None:
    """Refuse, before anything is recorded, a request for more GPUs per node than every node of
    its partition (or node list) has, as the executor reports them: one line naming what they
    have. An executor without nodes to name (it runs here) has nothing to check."""
    if not request.gpus_per_node:
        return
    nodes = executor.nodes(Scope(request.partition, request.nodelist, None, SPEC_LABELS))
    if not nodes or any(node.gpus >= request.gpus_per_node for node in nodes):
        return
    where = f"partition {request.partition}" if request.partition else "this cluster"
    if request.nodelist:
        where = f"node list {request.nodelist}"
    have = ", ".join(f"{node.name} {node.gpus}" for node in nodes[:6]) + (" ..." if len(nodes) > 6 else "")
    raise UserError(f"the plan needs {request.gpus_per_node} GPUs per node, but no node of {where} has that many "
                    f"(GPUs per node: {have}); plan on the wiring of its nodes (--topology-file, --node, or "
                    "target.scope each-node)")


def on_live_nodes(target: Target, executor: Executor, runs: list[Attempt],
                  stored) -> tuple[list[Attempt], dict[str, Pin], str | None, dict[str, str]]:
    """Where runs go again (a resume): (the runs that go, their pins, the nodes the others must
    keep off as a node list, {node: why} for the nodes pinned runs wait for). A run pinned to a
    node the executor says takes no work waits; the others go anywhere but such nodes (unless
    the target names its nodes itself). `stored`: the tasks' rows (their `node`, the pin). One
    node query for the pinned runs' nodes, one for the target's."""
    hosts_of = {t.task_id: tuple(t.node.split(",")) for t in stored if t.node}
    pinned = sorted({host for task_id, _ in runs for host in hosts_of.get(task_id, ())})
    nodes = {n.name: n for n in executor.nodes(Scope(nodelist=",".join(pinned))) or []} if pinned else {}
    exclude = None
    if any(task_id not in hosts_of for task_id, _ in runs) and not target.nodelist:
        avoided = executor.nodes(Scope(target.partition, labels=SPEC_LABELS)) or []
        exclude = ",".join(n.name for n in avoided if n.unavailable) or None
    going, waiting = [], {}
    for task_id, attempt in runs:
        down = [h for h in hosts_of.get(task_id, ()) if h in nodes and nodes[h].unavailable]
        for host in down:
            waiting[host] = f"{nodes[host].unavailable} (Slurm): its tasks wait for it"
        if not down:
            going.append((task_id, attempt))
    pins = {task_id: Pin.on(hosts_of[task_id], nodes, target.partition) for task_id, _ in going if task_id in hosts_of}
    return going, pins, exclude, waiting
