"""Stage "survey": the wiring of every node of a partition, a node list or a feature, probed by
one short job on each node (through the executor seam), stored as `wirewise topo save` stores
one node's, and summed up as node types (fingerprints) with their counts.

    survey(store, scope) -> Survey     `wirewise topo survey`; fleet campaigns probe the nodes
                                       whose wiring is not stored yet this way before planning

Each job holds every GPU of its node (Slurm's GRES count) and nothing else: where Slurm
constrains devices, NVML sees only the GPUs a job holds. It runs `SurveyJob` (survey/job.py):
NVML (else `nvidia-smi topo -m`), written to a file in the survey folder; only this process
writes the database. Nodes Slurm reports down or drained are left out (and said), unless
asked; so are nodes without GPUs in their GRES (nothing to probe: they run CPU ranks). Jobs
that have not started after `wait_s` are cancelled and reported, as are nodes whose probe
failed, each with its reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.executor import SLURM
from wirewise.orchestrator.executor.core import CANCELLED, ENDED, TIMEOUT, JobRequest, Node, Scope
from wirewise.runs import SurveyPaths

POLL_S = 1.0
# What a person wrote for each value the survey's jobs hand Slurm.
SURVEY_LABELS = {"partition": "--partition", "nodelist": "--nodelist", "constraint": "--constraint",
                 "time_min": "--time", "folder": "the survey folder (under WIREWISE_RUNS)"}
OnProgress = Callable[[int, int], None]  # (nodes answered, nodes surveyed)


@dataclass
class Survey:
    folder: str
    stored: dict[str, Any] = field(default_factory=dict)  # node -> its topology
    failed: dict[str, str] = field(default_factory=dict)  # node -> why no wiring came back
    left_out: dict[str, str] = field(default_factory=dict)  # node -> why it was not surveyed

    def types(self) -> list[dict[str, Any]]:
        """The node types found: one per fingerprint, most nodes first."""
        groups: dict[str, dict[str, Any]] = {}
        for node, topo in self.stored.items():
            group = groups.setdefault(topo.fingerprint, {
                "fingerprint": topo.fingerprint, "fabric": topo.fabric, "gpus": topo.gpus,
                "gpu_model": topo.gpu_model, "count": 0, "nodes": []})
            group["count"] += 1
            group["nodes"].append(node)
        return sorted(groups.values(), key=lambda g: (-g["count"], g["fingerprint"]))

    def to_json(self) -> dict[str, Any]:
        from wirewise.topology.fabric import domain_summary

        fabrics = {node: [gpu.get("fabric") for gpu in topo.details.get("gpus") or []] for node, topo in self.stored.items()}
        return {"folder": self.folder, "types": self.types(), "stored": len(self.stored), "nvlink": domain_summary(fabrics),
                "failed": [{"node": n, "reason": r} for n, r in self.failed.items()],
                "left_out": [{"node": n, "reason": r} for n, r in self.left_out.items()]}


def survey(store, scope: Scope, executor: str = SLURM, include_down: bool = False, time_min: int = 5,
           wait_s: float = 600.0, root: Path | None = None, on_progress: OnProgress | None = None) -> Survey:
    """Probe and store the wiring of every node of the scope."""
    from wirewise.orchestrator.executor import executor_named

    runner = executor_named(executor)
    nodes = runner.nodes(scope)
    if nodes is None:
        raise UserError(f"a survey runs one job on each node: executor {executor} has no nodes to name (use slurm)")
    return survey_nodes(store, nodes, executor, include_down, time_min, wait_s, root, on_progress)


def survey_nodes(store, nodes: list[Node], executor: str, include_down: bool = False, time_min: int = 5,
                 wait_s: float = 600.0, root: Path | None = None, on_progress: OnProgress | None = None) -> Survey:
    """survey() on nodes already listed (a fleet campaign's that have no stored wiring)."""
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.survey.job import SurveyJob

    paths = SurveyPaths.new(root)
    result = Survey(str(paths.folder))
    todo = []
    for node in nodes:
        if node.unavailable and not include_down:
            result.left_out[node.name] = f"{node.unavailable} (Slurm)"
        elif not node.gpus:
            result.left_out[node.name] = "no GPUs in its GRES: nothing to probe (it runs CPU ranks)"
        else:
            todo.append(node)
    if not todo:
        return result
    runner = executor_named(executor)
    paths.nodes.mkdir(parents=True, exist_ok=True)
    elements: dict[str, str] = {}
    try:
        for node in todo:
            request = JobRequest(folder=paths.submitit, name="wirewise-survey", time_min=time_min,
                                 gpus_per_node=node.gpus, nodelist=node.name, partition=_partition_of(node),
                                 requeue=False, labels=SURVEY_LABELS)
            submitted = runner.submit(request, SurveyJob(), [(str(paths.folder), node.name)])
            elements[node.name] = submitted.elements[0]
        _wait(runner, elements, paths, wait_s, on_progress)
    finally:
        left = [element for name, element in elements.items() if not paths.answer(name).exists()]
        if left:
            runner.cancel(left)  # nothing of the survey stays queued
    _store_answers(store, result, elements, runner.states(list(elements.values())), paths, wait_s)
    return result


def _partition_of(node: Node) -> str | None:
    return node.partitions[0] if node.partitions else None


def _wait(runner, elements: dict[str, str], paths: SurveyPaths, wait_s: float, on_progress: OnProgress | None) -> None:
    """Until every node answered or its job ended, or `wait_s` passed: one state query per poll."""
    deadline = time.monotonic() + wait_s
    while True:
        answered = [name for name in elements if paths.answer(name).exists()]
        if on_progress is not None:
            on_progress(len(answered), len(elements))
        waiting = [element for name, element in elements.items() if name not in answered]
        if not waiting or time.monotonic() > deadline:
            return
        states = runner.states(waiting)
        if all(state in (ENDED, CANCELLED, TIMEOUT) for state in states.values()):
            return
        time.sleep(POLL_S)


def _store_answers(store, result: Survey, elements: dict[str, str], states: dict, paths: SurveyPaths, wait_s: float) -> None:
    from wirewise.orchestrator.store.topology import save_topology
    from wirewise.topology import Topology

    for name, element in elements.items():
        path = paths.answer(name)
        if not path.exists():
            if states.get(element) == ENDED:
                result.failed[name] = f"its job {element} ended without an answer (logs: {paths.submitit})"
            else:
                result.failed[name] = f"no answer within {wait_s:g} s: its job {element} was cancelled"
            continue
        answer = json.loads(path.read_text())
        if answer.get("error"):
            result.failed[name] = answer["error"]
            continue
        topo = Topology.model_validate(answer["topology"])
        save_topology(store, topo, name)
        result.stored[name] = topo
