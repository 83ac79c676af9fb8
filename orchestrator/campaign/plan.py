"""Stage "plan": a campaign spec on a node's wiring -> tasks, each on its exact physical GPUs.

Every workload case (a collective sweep, or one model with one strategy) is crossed with the
axes: GPU count x placement x transport x repeat. The GPUs of each (count, placement) come
from the placement module (wirewise.orchestrator.placement.select_gpus), once per pair. A
combination that cannot be placed or run is listed as skipped with its reason, never dropped.
Without a topology (a machine with no GPU, local executor) tasks run as CPU ranks.

Task ids are the tasks' keys (wirewise.task.task_key): planning a spec twice gives the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.campaign.spec import CampaignSpec, Workload
from wirewise.ranges import format_ranges
from wirewise.task import KEY_FIELDS, TaskSpec, canonical_key_text, key_with_repeat
from wirewise.topology import Topology
from wirewise.workloads import Ranks


@dataclass
class PlannedTask:
    spec: TaskSpec
    placement: str  # packed | spread | all | explicit | cpu
    transport: str
    repeat: int

    def to_json(self) -> dict[str, Any]:
        spec = self.spec
        shown = {
            "task_id": spec.task_id, "workload": spec.workload, "params": spec.params, "gpus": spec.gpus,
            "placement": self.placement, "transport": self.transport, "repeat": self.repeat, "nodes": spec.nnodes,
        }
        return {**shown, "hosts": spec.hosts} if spec.hosts else shown


@dataclass
class Skipped:
    workload: str
    params: dict[str, Any]
    gpus: int | list[int] | str  # a count, explicit indices, or 'all'
    placement: str
    transport: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Plan:
    campaign: str
    topology: Topology | None  # None: CPU ranks
    tasks: list[PlannedTask] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # node -> why it runs nothing (fleet plans)

    @property
    def cpu_ranks(self) -> bool:
        """Every task runs CPU ranks: there is no GPU on the node planned on."""
        return self.topology is None

    def pins(self, partition: str | None) -> dict:
        """task id -> where it must run (wirewise.orchestrator.campaign.submit.Pin): a plan for one
        node type pins nothing (campaign.each_node's plans pin each task to its node)."""
        return {}

    def to_json(self) -> dict[str, Any]:
        node = None
        if self.topology is not None:
            node = {"gpus": self.topology.gpus, "fabric": self.topology.fabric, "fingerprint": self.topology.fingerprint}
        return {
            "campaign": self.campaign, "node": node,
            "tasks": [t.to_json() for t in self.tasks], "skipped": [s.to_json() for s in self.skipped],
        }


def plan_campaign(spec: CampaignSpec, topo: Topology | None) -> Plan:
    if topo is not None and spec.target.fabric and topo.fabric != spec.target.fabric:
        raise UserError(f"target.fabric is {spec.target.fabric} but the node planned on is {topo.fabric}: "
                        "plan on a node of that fabric (--topology-file or --node)")
    check_size(spec)
    plan = Plan(spec.name, topo)
    backend = spec.target.backend or ("nccl" if topo is not None else "gloo")
    placements: dict[tuple[int, str], tuple[list[int], str] | str] = {}
    for workload in spec.workloads:
        axes = spec.axes_for(workload)
        for label, params in _cases(workload):
            planned_sets: dict[tuple[int, ...], str] = {}  # GPU sets this case runs on, by placement
            for k, placement in _placements(axes.gpus, axes.placement):
                key = (k, str(placement))
                if key not in placements:
                    placements[key] = _place(topo, k, placement)
                placed = placements[key]
                if not isinstance(placed, str):
                    placed = _not_twice(placed, planned_sets, label)
                for transport in axes.transport:
                    skip = placed if isinstance(placed, str) else _transport_problem(transport, backend)
                    if skip:
                        plan.skipped.append(Skipped(workload.kind, label, _asked(k, placement), _name(placement), transport, skip))
                        continue
                    gpus, name = placed
                    task = _task(spec, workload, params, Ranks(gpus, len(gpus) or k or 2, backend), name, transport)
                    if isinstance(task, str):
                        plan.skipped.append(Skipped(workload.kind, label, _asked(k, placement), name, transport, task))
                        continue
                    plan.tasks.extend(PlannedTask(repeat, name, transport, r) for r, repeat in enumerate(_repeats(task, axes.repeats)))
    return plan


def check_size(spec: CampaignSpec) -> None:
    """Refuse, before expanding anything, a spec whose grid holds more than MAX_TASKS tasks
    (before skips: every case x GPU count x placement x transport x repeat)."""
    from wirewise.limits import MAX_TASKS

    total = 0
    for workload in spec.workloads:
        axes = spec.axes_for(workload)
        cases = 1 if workload.collectives is not None else len(workload.train.models) * len(workload.train.strategies)
        pairs = sum(1 if p == "all" or isinstance(p, list) else len(axes.gpus) for p in axes.placement)
        total += cases * pairs * len(axes.transport) * axes.repeats
    if total > MAX_TASKS:
        raise UserError(f"campaign {spec.name!r} asks for {total:,} tasks, more than the {MAX_TASKS:,} one campaign may "
                        "plan: split it, or lower axes.repeats or the lists it crosses")


def _cases(workload: Workload) -> Iterator[tuple[dict[str, Any], Any]]:
    """(what the case is, in words for skipped entries; its parameter model)."""
    if workload.collectives is not None:
        yield {"ops": workload.collectives.ops}, workload.collectives
        return
    for model in workload.train.models:
        for strategy in workload.train.strategies:
            yield {"model": model, "strategy": strategy}, workload.train.params(model, strategy)


def _placements(counts: list[int], placements: list) -> Iterator[tuple[int | None, str | list[int]]]:
    """(GPU count, placement) pairs: `all` and explicit lists fix their own count, once each."""
    seen = set()
    for placement in placements:
        if placement == "all" or isinstance(placement, list):
            k = len(placement) if isinstance(placement, list) else None
            if str(placement) not in seen:
                seen.add(str(placement))
                yield k, placement
            continue
        for k in counts:
            yield k, placement


def _place(topo: Topology | None, k: int | None, placement) -> tuple[list[int], str] | str:
    """(GPUs, placement name), or the reason it cannot be placed."""
    from wirewise.orchestrator.placement import Unplaceable, select_gpus

    if topo is None:
        from wirewise.limits import MAX_CPU_RANKS

        if placement == "packed" and k is not None and k > MAX_CPU_RANKS:
            return f"{k} CPU ranks on one machine: at most {MAX_CPU_RANKS} (no GPU here)"
        if placement == "packed":
            return [], "cpu"
        return f"no GPUs on the target: {_name(placement)} needs a GPU topology (plan with --topology-file or --node)"
    try:
        return select_gpus(topo, k, placement), _name(placement)
    except Unplaceable as exc:
        return str(exc)


def _not_twice(placed: tuple[list[int], str], planned: dict[tuple[int, ...], str], case) -> tuple[list[int], str] | str:
    """The same GPUs under two placement names (spread over every GPU of a node is packed) are
    measured once: the second is skipped, saying which one measures it."""
    gpus, name = placed
    first = planned.setdefault(tuple(gpus), name)
    if first != name and gpus:
        return f"the same GPUs as placement {first} ({format_ranges(gpus)}): measured there"
    return placed


def _asked(k: int | None, placement) -> int | list[int] | str:
    """The GPUs a skipped combination asked for: a count, the indices, or 'all'."""
    return placement if isinstance(placement, list) else (k if k is not None else "all")


def _name(placement) -> str:
    return "explicit" if isinstance(placement, list) else placement


def _transport_problem(transport: str, backend: str) -> str | None:
    if transport == "pcie" and backend != "nccl":
        return "transport pcie turns off NCCL's peer-to-peer path; these ranks use gloo"
    return None


def _repeats(first: TaskSpec, repeats: int) -> list[TaskSpec]:
    """The task and its repeats: the same checked spec, each with its own key (hashed from the
    shared key text once, which keeps a 10,000-task plan fast)."""
    text = canonical_key_text(first.model_dump(mode="json", include=set(KEY_FIELDS)))
    return [first] + [first.model_copy(update={"repeat": r, "task_id": key_with_repeat(text, r)}) for r in range(1, repeats)]


def _task(spec: CampaignSpec, workload: Workload, params, ranks: Ranks, placement: str, transport: str):
    """The TaskSpec (repeat 0), or the reason this workload cannot run on these ranks."""
    task = dict(campaign=spec.name, nnodes=spec.target.nodes, timeout_s=spec.target.timeout_s,
                labels={"placement": placement, "transport": transport})
    try:
        if workload.collectives is not None:
            return params.model_copy(update={"transport": transport}).to_task(ranks, **task)
        return params.to_task(ranks, transport=transport, **task)
    except UserError as exc:
        return str(exc)
