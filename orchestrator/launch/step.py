"""What srun runs on every node of a launch: `python -P -m wirewise.orchestrator.launch.step RUN_DIR`.

It reads the launch file `wirewise launch` wrote (RUN_DIR on shared storage), takes this node's
place from Slurm (wirewise.jobenv: SLURM_NODEID, the job's first node as the main process, the
rendezvous port every node of the step derives from the job and step ids), names this node's
GPUs as Slurm names them here, and becomes that node's `accelerate launch`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wirewise.errors import UserError


def main(argv: list[str]) -> int:
    from wirewise.jobenv import read_job_env
    from wirewise.launch_file import read_launch
    from wirewise.orchestrator.launch.command import accelerate_command, exec_command, node_env

    if len(argv) != 2:
        raise UserError("usage: python -m wirewise.orchestrator.launch.step RUN_DIR (srun runs it for wirewise launch)")
    job = read_job_env()
    if not job.in_step:
        raise UserError("wirewise.orchestrator.launch.step runs inside the srun step wirewise launch starts")
    run_dir = Path(argv[1])
    launch = read_launch(run_dir)
    port = job.step_port if len(launch.nodes) > 1 else 0
    command = accelerate_command(launch, run_dir, job.node_index, launch.nodes[0], port)
    exec_command(command, {**os.environ, **node_env(launch, run_dir, os.environ)})


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (UserError, OSError, ValueError) as exc:
        sys.stderr.write(f"wirewise: error: {exc}\n")
        sys.exit(2)
