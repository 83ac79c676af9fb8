"""Inside a Slurm allocation: the srun command that starts one task on each of its nodes
(`wirewise launch`). What the job was given is read by wirewise.jobenv, the one reader of the
scheduler's environment.

    one_task_per_node(job, argv) -> [...]   srun's argument list, to exec (never a shell)

The srun options are spelt out rather than inherited: inside a batch script srun reads SLURM_NTASKS,
SLURM_NTASKS_PER_NODE and SLURM_CPUS_PER_TASK from the job's environment as its own defaults
(srun(1), "INPUT ENVIRONMENT VARIABLES"), so a job asked for with `-n 8` would start eight
launchers; and since Slurm 21.08 a step gets only the CPUs it asks for, so one task per node
asks for the node's share of the job's CPUs (the fewest any node got: SLURM_JOB_CPUS_PER_NODE,
e.g. "16(x2),8"), or the launcher and every rank it starts would share one CPU.
`--kill-on-bad-exit` ends the other nodes' tasks when one fails, so no node waits forever at a
rendezvous its peer left.
"""

from __future__ import annotations

import shutil

from wirewise.errors import UserError
from wirewise.jobenv import JobEnv


def one_task_per_node(job: JobEnv, argv: list[str]) -> list[str]:
    """srun starting `argv` once on every node of the job; UserError where there is no srun."""
    if shutil.which("srun") is None:
        raise UserError("srun not found: inside a Slurm allocation the job's tasks start through srun")
    n = len(job.nodes)
    options = [f"--nodes={n}", f"--ntasks={n}", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    if job.cpus_per_node:
        options.append(f"--cpus-per-task={job.cpus_per_node}")
    return ["srun", *options, *argv]
