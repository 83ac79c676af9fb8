"""Stage "submit": a plan into bundles, bundles into submitit job arrays (or runs here).

Benchmarks need the node to themselves and the GPUs they were planned for, so an array
element holds a whole node (exclusive, every GPU, all its memory) and runs a bundle of
`target.tasks_per_element` tasks one after another (wirewise.orchestrator.campaign.bundle). A
multi-node task is an element of its own, on `target.nodes` nodes with one supervisor each.
Arrays are split into chunks of at most MaxArraySize elements, each numbered from 0 (the
limit is on the index). No user string reaches a shell: submitit gets an argument list and
its #SBATCH values were held to Slurm's character sets by the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirewise.orchestrator.campaign.bundle import Run
from wirewise.orchestrator.campaign.spec import Target


@dataclass
class Submission:
    """What one submission sends: bundles, split into arrays, with the Slurm parameters."""

    bundles: list[list[Run]]
    arrays: list[range]  # bundle indices per array (each array's elements are numbered from 0)
    parameters: dict[str, Any]  # submitit's update_parameters (empty for the local executor)
    max_array_size: int | None = None  # Slurm's limit the arrays were split by

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


def slurm_parameters(target: Target, name: str, gpus_per_node: int | None) -> dict[str, Any]:
    """submitit parameters for an element that holds whole nodes."""
    constraint = "&".join(c for c in (target.constraint, target.fabric, fingerprint_feature(target.fingerprint)) if c)
    parameters: dict[str, Any] = {
        "name": f"wirewise-{name}",
        "timeout_min": target.time_minutes,
        "nodes": target.nodes,
        "tasks_per_node": 1,
        "slurm_exclusive": True,
        "mem_gb": 0,  # with --exclusive, all of the node's memory (not the per-CPU default)
        "slurm_array_parallelism": target.array_parallelism,
    }
    if gpus_per_node:
        parameters["gpus_per_node"] = gpus_per_node  # --exclusive alone leaves CUDA_VISIBLE_DEVICES unset
    optional = {"slurm_partition": target.partition, "slurm_account": target.account, "slurm_qos": target.qos,
                "slurm_constraint": constraint or None, "slurm_nodelist": target.nodelist}
    parameters.update({k: v for k, v in optional.items() if v})
    return parameters


def fingerprint_feature(fingerprint: str | None) -> str | None:
    """The node feature `wirewise topo slurm` writes for a wiring: fp-<first 12 hex digits>."""
    return f"fp-{fingerprint[:12]}" if fingerprint else None


def prepare(runs: list[Run], target: Target, name: str, gpus_per_node: int | None, max_array: int | None) -> Submission:
    bundles = make_bundles(runs, target)
    if target.executor == "local":
        return Submission(bundles, [range(len(bundles))], {})
    step = max_array or len(bundles) or 1
    arrays = [range(i, min(i + step, len(bundles))) for i in range(0, len(bundles), step)]
    return Submission(bundles, arrays, slurm_parameters(target, name, gpus_per_node))


def submit_to_slurm(submission: Submission, folder: Path) -> dict[int, str]:
    """Submit every array; returns {bundle index: array element id (ARRAY_INDEX)}."""
    import submitit

    from wirewise.orchestrator.campaign.bundle import Bundle

    executor = submitit.AutoExecutor(folder=folder / "submitit", cluster="slurm")
    executor.update_parameters(**submission.parameters)
    elements: dict[int, str] = {}
    for array in submission.arrays:
        chunk = [submission.bundles[i] for i in array]
        jobs = executor.map_array(Bundle(), [str(folder)] * len(chunk), chunk)
        elements.update({index: job.job_id for index, job in zip(array, jobs)})
    return elements


def run_here(submission: Submission, folder: Path, on_task=None) -> dict[str, str]:
    """The local executor: the same bundles, on this machine, one task at a time. Stops at the
    first cancelled task (Ctrl-C)."""
    from wirewise.orchestrator.campaign.bundle import run_bundle

    ran: dict[str, str] = {}
    for bundle in submission.bundles:
        ran.update(run_bundle(folder, bundle, on_task))
        if "cancelled" in ran.values():
            break
    return ran
