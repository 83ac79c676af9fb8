"""The Slurm executor: elements as a job array through submitit (sbatch), states from one sacct
call (squeue for what sacct does not know yet), scancel; every Slurm command but sbatch
through wirewise.orchestrator.slurm.

submitit writes the batch script from `parameters(request)`, whose values JobRequest has
already held to Slurm's character sets. When sbatch says no, the refusal is one line with
Slurm's reason, what the job asked for and where to look (SubmissionRefused), and the files
submitit left for the refused script (its pickles, the script) are removed.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from wirewise.errors import UserError
from wirewise.orchestrator.executor.core import (
    CANCELLED, ENDED, PENDING, RUNNING, TIMEOUT, Elements, JobRequest, Node, OnSubmitted, Scope, Submitted,
    SubmissionRefused,
)

_WAITING = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED")
_GOING = ("RUNNING", "CONFIGURING", "COMPLETING")
# sbatch's reasons for refusing a job (slurm/src/common/slurm_errno.c) and where to look.
_WHERE_TO_LOOK = {
    "Requested node configuration is not available": "no node of the partition has all of that "
                                                     "(`sinfo -o '%P %D %c %G %f'`: CPUs, GPUs and features per node)",
    "Invalid partition name specified": "`sinfo -s` lists the partitions",
    "Invalid account or account/partition combination specified": "`sacctmgr show assoc user=$USER` lists your accounts",
    "Invalid qos specification": "`sacctmgr show qos` lists them",
    "Invalid feature specification": "no node has that feature (`sinfo -o '%N %f'` lists them)",
    "Invalid node name specified": "`sinfo -N` lists the nodes",
    "Requested time limit is invalid": "`sinfo -o '%P %l'` shows each partition's time limit",
    "Invalid job array specification": "the array is larger than MaxArraySize (`scontrol show config`)",
    "Job violates accounting/QOS policy": "your account's or QOS's limits (`sacctmgr show assoc user=$USER`)",
}


class SlurmExecutor:
    name: ClassVar[str] = "slurm"
    runs_here: ClassVar[bool] = False

    def parameters(self, request: JobRequest) -> dict[str, Any]:
        """submitit's update_parameters for the request."""
        parameters: dict[str, Any] = {"name": request.name, "timeout_min": request.time_min, "nodes": request.nodes,
                                      "tasks_per_node": request.tasks_per_node}
        if request.whole_node:
            # --exclusive, and all of the node's memory (not the per-CPU default)
            parameters.update(slurm_exclusive=True, mem_gb=0)
        optional = {"slurm_array_parallelism": request.parallelism,
                    "gpus_per_node": request.gpus_per_node,  # --exclusive alone leaves CUDA_VISIBLE_DEVICES unset
                    "cpus_per_task": request.cpus_per_task, "slurm_partition": request.partition,
                    "slurm_account": request.account, "slurm_qos": request.qos,
                    "slurm_constraint": request.constraint, "slurm_nodelist": request.nodelist,
                    "slurm_exclude": request.exclude}
        parameters.update({key: value for key, value in optional.items() if value})
        extra = {}  # sbatch options submitit has no parameter of its own for
        if request.reservation:
            extra["reservation"] = request.reservation
        segment = request.segment or self.segment(request)
        if segment:
            extra["segment"] = segment  # sbatch --segment (Slurm 24.05+): its nodes inside one block
        if not request.requeue:
            extra["no-requeue"] = True  # sbatch --no-requeue
        if extra:
            parameters["slurm_additional_parameters"] = extra
        return parameters

    @staticmethod
    def segment(request: JobRequest) -> int | None:
        """--segment for a multi-node job on a cluster running blocks: one placed by Slurm (no
        node list) asks for a block that holds it (one NVLink domain: docs/fleet.md); one that
        names nodes in several blocks (a pair test across domains) asks segments of one node,
        which Slurm would otherwise refuse. None otherwise, and off a cluster (a dry run)."""
        from wirewise.jobenv import hostnames
        from wirewise.orchestrator.slurm.blocks import cluster_blocks, segment_across, segment_for

        if request.nodes < 2:
            return None
        if request.nodelist:
            return segment_across(hostnames(request.nodelist), cluster_blocks())
        return segment_for(request.nodes, cluster_blocks())

    def array_limit(self, dry_run: bool = False) -> int | None:
        """MaxArraySize; a dry run off the cluster (no Slurm to ask) assumes Slurm's default."""
        from wirewise.orchestrator.slurm.cluster import DEFAULT_MAX_ARRAY_SIZE, max_array_size

        try:
            return max_array_size()
        except UserError:
            if not dry_run:
                raise
            return DEFAULT_MAX_ARRAY_SIZE

    def submit(self, request: JobRequest, fn: Callable, elements: Elements,
               on_submitted: OnSubmitted | None = None, until: Callable[[Any], bool] | None = None) -> Submitted:
        """One array (a plain job for one element). `until` does not apply: the elements run elsewhere."""
        import submitit
        from submitit.core.utils import FailedJobError

        try:
            executor = submitit.AutoExecutor(folder=request.folder, cluster="slurm")
        except RuntimeError:  # submitit finds no srun
            raise UserError("srun not found: submit from a machine with the Slurm client commands") from None
        executor.update_parameters(**self.parameters(request))
        before = _listing(request.folder)
        try:
            # submitit prints sbatch's stderr itself before raising: the refusal is said once, below
            with contextlib.redirect_stderr(io.StringIO()), executor.batch():
                jobs = [executor.submit(fn, *args) for args in elements]
        except FailedJobError as exc:
            _remove_new(request.folder, before)
            raise refusal(str(exc), request) from None
        ids = [str(job.job_id) for job in jobs]
        submitted = Submitted(ids[0].split("_")[0], ids)
        if on_submitted is not None:
            on_submitted(submitted)
        return submitted

    def states(self, elements: list[str | None]) -> dict[str | None, str]:
        """One sacct call for the arrays of these elements; squeue only for elements sacct does
        not know (just submitted, or cancelled before they started: then no longer queued)."""
        from wirewise.orchestrator.slurm.cluster import element_states, queued_elements

        ids = sorted({e for e in elements if e})
        found = element_states(sorted({e.split("_")[0] for e in ids}))
        unknown = [e for e in ids if e not in found]
        if unknown:
            queued = queued_elements(sorted({e.split("_")[0] for e in unknown}))
            found.update({e: "PENDING" if e in queued else "CANCELLED" for e in unknown})
        return {e: _neutral(found[e]) if e else PENDING for e in set(elements)}

    def allocation_problems(self, elements: list[str]) -> dict[str, str]:
        from wirewise.orchestrator.slurm.blocks import allocation_problems

        return allocation_problems(elements)

    def cancel(self, elements: list[str]) -> dict[str, Any]:
        from wirewise.orchestrator.slurm.cluster import cancel

        arrays = sorted({e.split("_")[0] for e in elements})
        cancel(arrays)
        return {"cancelled_arrays": arrays}


    def nodes(self, scope: Scope) -> list[Node]:
        """The nodes `sinfo -N` lists for the scope (its constraint evaluated on their features)."""
        from wirewise.orchestrator.slurm.nodes import select_nodes

        found = select_nodes(scope.partition, scope.nodelist, scope.constraint, dict(scope.labels))
        return [Node(n.name, n.gpus, n.features, n.partitions, n.unavailable) for n in found]


def _neutral(state: str) -> str:
    if state in _WAITING:
        return PENDING
    if state in _GOING:
        return RUNNING
    return {"CANCELLED": CANCELLED, "TIMEOUT": TIMEOUT}.get(state, ENDED)


def refusal(stderr: str, request: JobRequest) -> SubmissionRefused:
    """sbatch's error lines -> one line: Slurm's reason, its other words, what the job asked for,
    where to look."""
    lines = [line.split("error:", 1)[-1].strip() for line in stderr.strip().splitlines() if line.strip()]
    failed = [line for line in lines if "submission failed:" in line]
    reason = failed[0].split("submission failed:", 1)[1].strip() if failed else (lines[-1] if lines else "no message")
    details = [line for line in lines if line not in failed][:1]
    look = next((hint for start, hint in _WHERE_TO_LOOK.items() if reason.startswith(start)), None)
    said = f"Slurm refused the job: {reason}" + (f" ({details[0]})" if details else "")
    said += f"; it asked for {request.describe()}" + (f"; {look}" if look else "")
    return SubmissionRefused(said, reason)


def _listing(folder: Path) -> set[str] | None:
    """The names in the folder; None when there is no such folder."""
    try:
        return set(os.listdir(folder))
    except OSError:
        return None


def _remove_new(folder: Path, before: set[str] | None) -> None:
    """What submitit wrote for a refused submission: its pickles and script (files only), and
    the folder itself when submitit made it."""
    for name in (_listing(folder) or set()) - (before or set()):
        path = folder / name
        if path.is_file() or path.is_symlink():
            path.unlink(missing_ok=True)
    if before is None:
        with contextlib.suppress(OSError):
            folder.rmdir()  # empty again unless something else was put there meanwhile
