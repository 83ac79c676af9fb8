"""Inside a Slurm allocation: what the job was given, read from its SLURM_* variables, and the
srun command that starts one task on each of its nodes (`wirewise launch`).

    current_job(env) -> SlurmJob | None     None outside an allocation
    one_task_per_node(job, argv) -> [...]   srun's argument list, to exec (never a shell)

Host names come from submitit's node-list parser (SLURM_JOB_NODELIST, `gpu[01-04,07]`;
wirewise.orchestrator.slurm.nodes.hostnames). The
srun options are spelt out rather than inherited: inside a batch script srun reads SLURM_NTASKS,
SLURM_NTASKS_PER_NODE and SLURM_CPUS_PER_TASK from the job's environment as its own defaults
(srun(1), "INPUT ENVIRONMENT VARIABLES"), so a job asked for with `-n 8` would start eight
launchers; and since Slurm 21.08 a step gets only the CPUs it asks for, so one task per node
asks for the node's share of the job's CPUs (the fewest any node got: SLURM_JOB_CPUS_PER_NODE,
e.g. "16(x2),8"), or the launcher and every rank it starts would share one CPU.
`--kill-on-bad-exit` ends the other nodes' tasks when one fails, so no node waits forever at a
rendezvous its peer left.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.nodes import hostnames

_CPUS = re.compile(r"(\d+)(?:\(x(\d+)\))?")


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    nodes: list[str]  # host names, in Slurm's order (node 0 first)
    node_index: int  # this host's place among them (SLURM_NODEID)
    in_step: bool  # inside an srun step already (SLURM_STEP_ID), not the batch script or salloc's shell
    cpus_per_node: int | None  # the fewest CPUs the job holds on any of its nodes

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1


def current_job(env: Mapping[str, str]) -> SlurmJob | None:
    """The allocation this process runs in, from its environment; None outside Slurm."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        return None
    return SlurmJob(
        job_id=job_id,
        nodes=hostnames(env["SLURM_JOB_NODELIST"]) if env.get("SLURM_JOB_NODELIST") else [],
        node_index=int(env.get("SLURM_NODEID", "0") or 0),
        in_step="SLURM_STEP_ID" in env,
        cpus_per_node=fewest_cpus(env.get("SLURM_JOB_CPUS_PER_NODE", "")),
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


def one_task_per_node(job: SlurmJob, argv: list[str]) -> list[str]:
    """srun starting `argv` once on every node of the job; UserError where there is no srun."""
    if shutil.which("srun") is None:
        raise UserError("srun not found: inside a Slurm allocation the job's tasks start through srun")
    n = len(job.nodes)
    options = [f"--nodes={n}", f"--ntasks={n}", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    if job.cpus_per_node:
        options.append(f"--cpus-per-task={job.cpus_per_node}")
    return ["srun", *options, *argv]
