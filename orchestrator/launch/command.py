"""Start a training script with its advice: the run folder, the command, and the start itself.

    plan_launch(advice, script, db) -> Launch   what would run (`--dry-run` prints it)
    start(launch)                               write the run folder, then exec the command

The run folder ($WIREWISE_RUNS, else ./.wirewise/runs; on shared storage for several nodes)
holds launch.json (what was decided: wirewise.launch_file), accelerate.yaml and, for a DeepSpeed
strategy, deepspeed.json. The process then becomes the job (exec: Slurm's signals and the
exit code reach it directly, nothing waits in between):

- on a workstation, or inside a one-node srun step already: `accelerate launch --config_file
  RUN_DIR/accelerate.yaml SCRIPT ARGS` (a free rendezvous port, `--main_process_port 0`);
- inside an allocation (the batch script, or salloc's shell): srun, one task per node
  (wirewise.orchestrator.slurm.steps), each running wirewise.orchestrator.launch.step, which
  execs that node's `accelerate launch` with the machine rank (SLURM_NODEID) and the main
  process address (the job's first node) from Slurm, and a rendezvous port every node derives
  from the job and step ids (wirewise.jobenv.JobEnv.step_port). One node goes through srun too:
  the step is then accounted and signalled as Slurm does for every step.

The script and its arguments are an argument list from start to end: accelerate receives them
as they were typed (no shell, no quoting). SCRIPT is what `accelerate launch` takes: a Python
file, or `-m package.module`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from wirewise.errors import UserError
from wirewise.launch_file import LAUNCH_FILE, LaunchFile
from wirewise.settings import DB, LAUNCH_DIR, STRATEGY
from wirewise.orchestrator.launch.advice import CONFIG_FILE, Advice
from wirewise.orchestrator.store.engine import absolute_url, display_url

ACCELERATE = [sys.executable, "-P", "-m", "accelerate.commands.launch"]
STEP = [sys.executable, "-P", "-m", "wirewise.orchestrator.launch.step"]
STEP_PORT = "<port from the job and step ids>"  # as a dry run shows it: only the step knows it


@dataclass(frozen=True)
class Launch:
    advice: Advice
    run_dir: Path
    file: LaunchFile
    command: list[str]  # what this process becomes: srun ..., or accelerate launch ...
    node_command: list[str]  # accelerate launch as node 0 runs it
    env: dict[str, str]  # added to node 0's environment (every node's, but for its own GPU names)

    def to_dict(self) -> dict:
        shown_env = {**self.env, **({DB.name: self.file.db} if DB.name in self.env else {})}  # no password
        return {**self.advice.to_dict(), "accelerate_config": self.advice.config_in(self.run_dir), "run_dir": str(self.run_dir), "config_file": self.file.accelerate_config_file,
                "script": self.file.script, "command": self.command, "node_command": self.node_command,
                "env": shown_env, "db": self.file.db}


def plan_launch(advice: Advice, script: list[str], db: str | None, env: Mapping[str, str] | None = None) -> Launch:
    """What `wirewise launch` runs for this advice: UserError for what cannot start."""
    from wirewise.runs import RunsRoot
    from wirewise.jobenv import read_job_env
    from wirewise.orchestrator.slurm.steps import one_task_per_node

    env = os.environ if env is None else env
    if advice.strategy is None:
        why = next((r.removeprefix("strategy: ") for r in advice.reasons if "nothing fits" in r), "no strategy fits")
        raise UserError(f"{why} (or name a strategy with --strategy to run anyway)")
    script = check_script(script)
    run_dir = RunsRoot.configured().new_run(f"launch-{advice.slurm_job_id}" if advice.slurm_job_id else "launch").resolve()
    db_url = absolute_url(db)
    file = _launch_file(advice, script, run_dir, display_url(db_url))
    job = read_job_env(env)
    if len(advice.nodes) > 1 and not job.in_slurm:
        raise UserError(f"WORLD_SIZE={job.ranks.world_size if job.ranks else '?'} and LOCAL_WORLD_SIZE="
                        f"{job.ranks.local_world_size if job.ranks else '?'} say this process is one of ranks already "
                        f"started across {len(advice.nodes)} machines, and no Slurm job says where the others are: "
                        "run wirewise launch outside the ranks (it starts them), in a Slurm job for several nodes")
    if job.in_step and job.multi_node:
        raise UserError("run wirewise launch once for the job (in its batch script, or in salloc's shell), "
                        "not under srun: it starts one task on every node itself")
    node_command = accelerate_command(file, run_dir, 0, advice.nodes[0], 0 if len(advice.nodes) == 1 else None)
    if job.in_slurm and not job.in_step:
        command = one_task_per_node(job, [*STEP, str(run_dir)])
    else:
        command = node_command
    return Launch(advice, run_dir, file, command, node_command, node_env(file, run_dir, env, db_url))


def check_script(script: list[str]) -> list[str]:
    """SCRIPT ARGS as accelerate launch takes them; one line saying how to fix anything else."""
    if not script:
        raise UserError("give the training script after `--`, e.g. wirewise launch --model mistral-7b -- train.py --lr 1e-4")
    if script[0] in ("-m", "--module"):
        if len(script) < 2 or not all(part.isidentifier() for part in script[1].split(".")):
            raise UserError(f"-m {script[1] if len(script) > 1 else ''!r}: give a module name, "
                            "e.g. wirewise launch --model mistral-7b -- -m my_package.train")
        return ["-m", *script[1:]]
    if not Path(script[0]).is_file():
        raise UserError(f"{script[0]!r} is not a file: give the training script as accelerate launch takes it "
                        "(train.py ARGS, or -m package.module ARGS; not `python train.py`)")
    # A file named like an option (--debug) goes as a path, or accelerate would take it for one.
    return [os.path.join(".", script[0]) if script[0].startswith("-") else script[0], *script[1:]]


def accelerate_command(file: LaunchFile, run_dir: Path, machine_rank: int, main_addr: str, port: int | None) -> list[str]:
    """This node's `accelerate launch`: the launch's config, its place among the nodes, the script.
    `port` None: the rendezvous port is only known inside the srun step."""
    command = [*ACCELERATE, "--config_file", str(run_dir / CONFIG_FILE)]
    if len(file.nodes) > 1:
        command += ["--machine_rank", str(machine_rank), "--main_process_ip", main_addr]
    command += ["--main_process_port", STEP_PORT if port is None else str(port)]
    script = file.script
    if script[0] == "-m":
        command += ["--module", *script[1:]]
    else:
        command += script
    return command


def node_env(file: LaunchFile, run_dir: Path, env: Mapping[str, str], db_url: str | None = None) -> dict[str, str]:
    """What the ranks on this node get on top of the job's environment: the run folder, the
    strategy, the database (`db_url`, on node 0: srun passes the environment on), and their GPUs
    as this node names them (or none, for CPU ranks: accelerate's MULTI_GPU launcher does not
    pass use_cpu on, ACCELERATE_USE_CPU does)."""
    from wirewise.jobenv import read_job_env

    added = {LAUNCH_DIR.name: str(run_dir), STRATEGY.name: file.strategy}
    if db_url:
        added[DB.name] = db_url
    if file.device == "cuda":
        added["CUDA_VISIBLE_DEVICES"] = read_job_env(env).visible_devices(file.gpus)
        added["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # nvidia-smi's numbering, which the indices are in
    else:
        added.update(CUDA_VISIBLE_DEVICES="", ACCELERATE_USE_CPU="true")
    return added


def start(launch: Launch) -> NoReturn:
    """Write the run folder, then become the command."""
    from wirewise.atomic import write_text_atomic

    if importlib.util.find_spec("accelerate") is None:
        raise UserError("accelerate is not installed here: pip install 'wirewise[jobs]' where the job runs")
    try:
        launch.run_dir.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"cannot make the run folder {launch.run_dir} (WIREWISE_RUNS): {exc.strerror}") from None
    launch.advice.write_config(launch.run_dir)
    write_text_atomic(launch.run_dir / LAUNCH_FILE, launch.file.model_dump_json(indent=1))
    exec_command(launch.command, {**os.environ, **launch.env})


def exec_command(command: list[str], env: Mapping[str, str]) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(command[0], command, dict(env))


def _launch_file(advice: Advice, script: list[str], run_dir: Path, db_shown: str) -> LaunchFile:
    placement = advice.placement or {}
    return LaunchFile(
        model=advice.model, batch_size=advice.batch_size, seq_len=advice.seq_len, strategy=advice.strategy,
        chosen_by=advice.chosen_by, advised=advice.advised, device=advice.device,
        processes_per_node=advice.processes_per_node, nodes=advice.nodes, gpus=advice.gpus,
        assigned_gpus=advice.assigned_gpus, placement=placement.get("policy"),
        predicted_busbw_gbs=placement.get("predicted_busbw_gbs"), busbw_basis=placement.get("basis"),
        topology=advice.topology, slurm_job_id=advice.slurm_job_id,
        accelerate_config_file=str(run_dir / CONFIG_FILE), script=script, db=db_shown,
    )
