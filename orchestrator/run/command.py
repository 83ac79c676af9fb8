"""What `wirewise run` is asked, checked, and what runs in the job.

RunRequest holds the options as typed, checked when it is made against the same rules every
job request is held to (wirewise.orchestrator.slurm.values): `--node` is one Slurm host name,
`-p` a Slurm name, `--folder` a plain path without '%', `-t` and `-c` in range. A newline in
any of them would otherwise end an #SBATCH line of the script submitit writes, and what
followed would run on the compute node.

CommandInJob is what submitit pickles: the user's argument list (never a shell string), the
job's own environment plus ours, the chosen GPUs pinned.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.values import HOST, check_values

# The options a person typed, for each value they set.
RUN_LABELS = {"nodelist": "--node", "partition": "-p/--partition", "time_min": "-t/--time",
              "cpus_per_task": "-c/--cpus-per-task", "folder": "--folder", "gpus_per_node": "--gpus", "nodes": "--nodes",
              "segment": "--nodes"}


@dataclass
class CommandInJob:
    """What runs in the job: the job's own environment plus ours, the chosen GPUs pinned, then
    the argument list through submitit's CommandFunction."""

    command: list[str]
    cwd: str
    env: dict[str, str]
    pin: list[int] | None = None  # physical GPU indices; None: the GPUs Slurm gave, as they are

    def __call__(self) -> str:
        from submitit.helpers import CommandFunction

        from wirewise.jobenv import read_job_env

        env = {**os.environ, **self.env}
        if self.pin is not None:
            # Slurm may renumber the job's GPUs or list UUIDs: name the chosen ones as the job sees them.
            env["CUDA_VISIBLE_DEVICES"] = read_job_env(env).visible_devices(self.pin)
        return CommandFunction(self.command, verbose=True, cwd=self.cwd, env=env)()


@dataclass
class RunRequest:
    command: list[str]
    gpus: int
    whole_node: bool = False
    model: str | None = None
    node: str | None = None
    partition: str | None = None
    time_min: int = 60
    cpus_per_task: int | None = None
    folder: Path = Path("wirewise-runs")
    start_timeout_s: float = 60.0
    nodes: int = 1  # --nodes: a multi-node job, `gpus` on each

    def __post_init__(self) -> None:
        if self.node is not None:
            HOST.check(self.node, "--node")
        if self.nodes > 1 and self.node is not None:
            raise UserError(f"--node {self.node} names one node and --nodes {self.nodes} asks for {self.nodes}: "
                            "give --nodes alone (wirewise chooses them from the stored nodes)")
        check_values({"partition": self.partition, "time_min": self.time_min, "cpus_per_task": self.cpus_per_task,
                      "folder": str(self.job_folder), "nodes": self.nodes}, RUN_LABELS)
        if not (math.isfinite(self.start_timeout_s) and self.start_timeout_s >= 0):
            raise UserError(f"--start-timeout {self.start_timeout_s:g}: give the seconds to wait, 0 or more")

    @property
    def job_folder(self) -> Path:
        """--folder as submitit writes it into the script: absolute."""
        return self.folder.expanduser().absolute()
