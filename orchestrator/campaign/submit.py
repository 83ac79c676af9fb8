"""Stage "submit", for campaigns: a plan into bundles, bundles into arrays, with the job every
element asks for; the executor (wirewise.orchestrator.executor) sends them.

Benchmarks need the node to themselves and the GPUs they were planned for, so an array
element holds a whole node (exclusive, every GPU, all its memory) and runs a bundle of
`target.tasks_per_element` tasks one after another (wirewise.orchestrator.campaign.bundle). A
multi-node task is an element of its own, on `target.nodes` nodes with one supervisor each.
Arrays are split into chunks of at most the executor's array limit (Slurm's MaxArraySize),
each numbered from 0 (the limit is on the index). No user string reaches a shell: submitit
gets an argument list, and the job request holds its values to Slurm's character sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirewise.orchestrator.campaign.bundle import Run
from wirewise.orchestrator.campaign.spec import Target
from wirewise.orchestrator.executor.core import Executor, JobRequest

# What a person wrote for each value of the job request: errors name it.
SPEC_LABELS = {"name": "name", "time_min": "target.time", "nodes": "target.nodes", "partition": "target.partition",
               "account": "target.account", "qos": "target.qos", "constraint": "target.constraint",
               "nodelist": "target.nodelist", "parallelism": "target.array_parallelism",
               "folder": "the campaign folder (target.folder, or under WIREWISE_RUNS)"}


@dataclass
class Submission:
    """What one submission sends: bundles, split into arrays, with the executor's parameters."""

    bundles: list[list[Run]]
    arrays: list[range]  # bundle indices per array (each array's elements are numbered from 0)
    parameters: dict[str, Any]  # the executor's own form of the request (submitit's update_parameters)
    request: JobRequest
    max_array_size: int | None = None  # the limit the arrays were split by

    def to_json(self) -> dict[str, Any]:
        return {
            "bundles": len(self.bundles),
            "tasks": sum(len(b) for b in self.bundles),
            "array_elements": [len(a) for a in self.arrays],  # elements per array, in submission order
            "max_array_size": self.max_array_size,
            "parameters": self.parameters,
        }


def make_bundles(runs: list[Run], target: Target) -> list[list[Run]]:
    size = 1 if target.nodes > 1 else target.tasks_per_element
    return [runs[i : i + size] for i in range(0, len(runs), size)]


def job_request(target: Target, name: str, gpus_per_node: int | None, root: Path) -> JobRequest:
    """The job every element of the campaign asks for: whole nodes of the target."""
    constraint = "&".join(c for c in (target.constraint, target.fabric, fingerprint_feature(target.fingerprint)) if c)
    return JobRequest(
        folder=root / "submitit", name=f"wirewise-{name}", time_min=target.time_minutes, nodes=target.nodes,
        tasks_per_node=1, whole_node=True, gpus_per_node=gpus_per_node or None, partition=target.partition,
        account=target.account, qos=target.qos, constraint=constraint or None, nodelist=target.nodelist,
        parallelism=target.array_parallelism, labels=SPEC_LABELS,
    )


def fingerprint_feature(fingerprint: str | None) -> str | None:
    """The node feature `wirewise topo slurm` writes for a wiring: fp-<first 12 hex digits>."""
    return f"fp-{fingerprint[:12]}" if fingerprint else None


def prepare(runs: list[Run], target: Target, request: JobRequest, executor: Executor, dry_run: bool = False) -> Submission:
    bundles = make_bundles(runs, target)
    limit = executor.array_limit(dry_run)
    step = limit or len(bundles) or 1
    arrays = [range(i, min(i + step, len(bundles))) for i in range(0, len(bundles), step)]
    return Submission(bundles, arrays, executor.parameters(request), request, limit)
