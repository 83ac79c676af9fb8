"""Fleet campaigns: a spec whose `target.scope` is `each-node` runs its whole grid on every node
of a partition, a node list or a constraint, each node's tasks pinned to it (`--nodelist`) and
planned on its own wiring.

The nodes come from the executor (Slurm: one `sinfo -N`), their wirings from the store in one
query. Nodes are grouped by fingerprint, and the spec is planned once per distinct numbering of
a wiring (renumbered nodes of one fingerprint get their own GPU indices), so one spec covers a
cluster of mixed node types: a thousand nodes of three types are three plans, copied per node.
A node's copy of a task is another task (its key holds the node: wirewise.task.TaskSpec.hosts).

Left out, each with its reason: nodes Slurm reports down, drained or not responding (unless
asked), nodes whose wiring is not stored yet (a submission probes them first:
wirewise.orchestrator.survey), nodes whose GPU count in Slurm differs from their stored
wiring's, and nodes of another fabric than `target.fabric`. Nodes without GPUs in their GRES
run the grid as CPU ranks, a group of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.campaign.plan import Plan, PlannedTask, Skipped, plan_campaign
from wirewise.orchestrator.campaign.spec import CampaignSpec, Target
from wirewise.orchestrator.campaign.submit import SPEC_LABELS, Pin
from wirewise.orchestrator.executor.core import Node, Scope
from wirewise.task import KEY_FIELDS, canonical_key_text, key_with_repeat
from wirewise.topology import Topology


@dataclass
class FleetGroup:
    """Nodes of one wiring (fingerprint), and what each of them runs."""

    topology: Topology | None  # the wiring its first node was planned on; None: CPU nodes
    nodes: list[str] = field(default_factory=list)
    tasks_per_node: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        topo = self.topology
        return {"fingerprint": topo.fingerprint if topo else None, "fabric": topo.fabric if topo else "cpu",
                "gpus": topo.gpus if topo else 0, "gpu_model": topo.gpu_model if topo else None,
                "count": len(self.nodes), "nodes": self.nodes, "tasks_per_node": self.tasks_per_node}


@dataclass
class FleetPlan(Plan):
    groups: list[FleetGroup] = field(default_factory=list)
    nodes: dict[str, Node] = field(default_factory=dict)  # every node of the scope, as the executor told
    unsurveyed: list[Node] = field(default_factory=list)  # nodes with GPUs and no stored wiring

    @property
    def cpu_ranks(self) -> bool:
        return False  # each group says what its nodes run

    def pins(self, partition: str | None) -> dict[str, Pin]:
        """Each task's pin: its node, with every GPU Slurm says it has."""
        pins: dict[tuple[str, ...], Pin] = {}
        found = {}
        for task in self.tasks:
            hosts = tuple(task.spec.hosts)
            if hosts not in pins:
                pins[hosts] = Pin.on(hosts, self.nodes, partition)
            found[task.spec.task_id] = pins[hosts]
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign, "scope": "each-node", "node": None,
            "groups": [g.to_json() for g in self.groups],
            "left_out": [{"node": n, "reason": r} for n, r in self.left_out.items()],
            "tasks": [t.to_json() for t in self.tasks], "skipped": [s.to_json() for s in self.skipped],
        }


def scope_of(target: Target) -> Scope:
    return Scope(target.partition, target.nodelist, target.constraint, SPEC_LABELS)


def fleet_nodes(spec: CampaignSpec) -> list[Node]:
    """The nodes the spec's target names, as its executor lists them."""
    from wirewise.orchestrator.executor import executor_named

    nodes = executor_named(spec.target.executor).nodes(scope_of(spec.target))
    if nodes is None:
        raise UserError(f"target.scope each-node pins tasks to nodes: executor {spec.target.executor} runs on this machine "
                        "only; use executor slurm")
    return nodes


def plan_fleet(spec: CampaignSpec, nodes: list[Node], wirings: dict[str, Topology], include_down: bool = False,
               probe_failed: dict[str, str] | None = None) -> FleetPlan:
    """The plan of every node: grouped by wiring, planned once per numbering, pinned per node."""
    plan = FleetPlan(spec.name, None, nodes={node.name: node for node in nodes})
    numberings: dict[int, tuple[Topology | None, list[str]]] = {}
    for node in nodes:
        reason = _left_out(spec, node, wirings.get(node.name), include_down, probe_failed or {})
        if reason:
            plan.left_out[node.name] = reason
            if reason.startswith(NOT_STORED):
                plan.unsurveyed.append(node)
            continue
        topo = wirings.get(node.name) if node.gpus else None
        numberings.setdefault(id(topo), (topo, []))[1].append(node.name)
    groups: dict[str | None, FleetGroup] = {}
    for topo, names in numberings.values():
        own = plan_campaign(spec, topo)
        fingerprint = topo.fingerprint if topo else None
        group = groups.get(fingerprint)
        if group is None:
            group = groups[fingerprint] = FleetGroup(topo, tasks_per_node=len(own.tasks), skipped=own.skipped)
            plan.skipped += own.skipped
        group.nodes += names
        for task in own.tasks:
            plan.tasks += _pinned(task, names)
    plan.groups = sorted(groups.values(), key=lambda g: (-len(g.nodes), g.nodes[0]))
    return plan


NOT_STORED = "its wiring is not stored yet"


def _left_out(spec: CampaignSpec, node: Node, topo: Topology | None, include_down: bool, probe_failed: dict[str, str]) -> str | None:
    if node.unavailable and not include_down:
        return f"{node.unavailable} (Slurm); --include-down plans it too"
    if not node.gpus:
        return None
    if node.name in probe_failed:
        return f"its wiring could not be probed: {probe_failed[node.name]}"
    if topo is None:
        return f"{NOT_STORED}: a submission probes it first (or `wirewise topo survey --nodelist {node.name}`)"
    if topo.gpus != node.gpus:
        return (f"Slurm reports {node.gpus} GPU(s), its stored wiring has {topo.gpus}: probe it again "
                f"(`wirewise topo survey --nodelist {node.name}`)")
    if spec.target.fabric and topo.fabric != spec.target.fabric:
        return f"fabric {topo.fabric}, not target.fabric {spec.target.fabric}"
    return None


def _pinned(task: PlannedTask, nodes: list[str]) -> list[PlannedTask]:
    """The task on each node: pinned to it, with its own key (the key text hashed once per node)."""
    spec = task.spec
    fields = spec.model_dump(mode="json", include=set(KEY_FIELDS))
    copies = []
    for node in nodes:
        task_id = key_with_repeat(canonical_key_text({**fields, "hosts": [node]}), spec.repeat)
        copies.append(PlannedTask(spec.model_copy(update={"hosts": [node], "task_id": task_id}), task.placement,
                                  task.transport, task.repeat))
    return copies
