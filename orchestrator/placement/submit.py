"""`wirewise run`: the user's own command on Slurm, placed on the wiring, recorded.

Two ways to share a node with Slurm:
- whole node (`--whole-node`): the job holds every GPU of the node (--exclusive), and the
  command sees only the chosen set through CUDA_VISIBLE_DEVICES;
- shared (default): Slurm picks K GPUs on a node whose features name the right fabric (the
  `--constraint` that `wirewise topo slurm` suggests); once the job starts, the GPUs Slurm gave
  are read back (`scontrol show job -d`), predicted next to the best free set, and a warning
  says when they are worse.
Either way the advised strategy is exported as WIREWISE_STRATEGY (given --model). The command
goes to submitit as an argument list (submitit.helpers.CommandFunction), never through a shell.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from wirewise.errors import UserError

STRATEGY_ENV = "WIREWISE_STRATEGY"
START_POLL_S = 0.5


@dataclass
class CommandInJob:
    """What runs in the job (pickled by submitit): the job's own environment plus ours, the
    chosen GPUs pinned, then the argument list through CommandFunction."""

    command: list[str]
    cwd: str
    env: dict[str, str]
    pin: list[int] | None = None  # physical GPU indices; None: the GPUs Slurm gave, as they are

    def __call__(self) -> str:
        from submitit.helpers import CommandFunction

        from wirewise.orchestrator.slurm.gpus import device_ids

        env = {**os.environ, **self.env}
        if self.pin is not None:
            # Slurm may renumber the job's GPUs or list UUIDs: name the chosen ones as the job sees them.
            env["CUDA_VISIBLE_DEVICES"] = ",".join(device_ids(self.pin, env) or map(str, self.pin))
        return CommandFunction(self.command, verbose=True, cwd=self.cwd, env=env)()


@dataclass
class RunRequest:
    command: list[str]
    gpus: int
    whole_node: bool = False
    model: str | None = None
    partition: str | None = None
    time_min: int = 60
    cpus_per_task: int | None = None
    folder: Path = Path("wirewise-runs")
    start_timeout_s: float = 60.0


def run_command(request: RunRequest, topo, node: str | None, placement: dict, strategy: str | None, store) -> dict:
    """Submit, record, and (shared) read back the GPUs Slurm gave. Returns the `run --json` object."""
    if not request.command:
        raise UserError("give the command to run after `--`, e.g. wirewise run --gpus 2 -- python train.py")
    env = {STRATEGY_ENV: strategy} if strategy else {}
    pin = placement["gpus"] if request.whole_node else None
    job = _executor(request, topo, node).submit(CommandInJob(list(request.command), os.getcwd(), env, pin))
    result = {
        "job_id": str(job.job_id),
        "mode": "whole-node" if request.whole_node else "shared",
        "node": node,
        "command": list(request.command),
        "gpus": pin,
        "cuda_visible_devices": ",".join(map(str, pin)) if pin else None,
        "constraint": None if request.whole_node else topo.fabric,
        "strategy": strategy,
        "predicted_busbw_gbs": placement["predicted_busbw_gbs"] if pin else None,
        "basis": placement["basis"] if pin else None,
        "best_free_gpus": placement["gpus"],
        "best_free_busbw_gbs": placement["predicted_busbw_gbs"],
        "folder": str(request.folder),
        "warnings": [],
    }
    if not request.whole_node:
        result.update(_given_by_slurm(result["job_id"], node, topo, placement, store, request.start_timeout_s))
    result["record_id"] = record(store, result, request, topo, placement)
    return result


def _executor(request: RunRequest, topo, node: str | None):
    import submitit

    executor = submitit.AutoExecutor(folder=request.folder, cluster="slurm")
    params = {"timeout_min": request.time_min, "slurm_job_name": "wirewise-run"}
    if request.partition:
        params["slurm_partition"] = request.partition
    if request.cpus_per_task:
        params["cpus_per_task"] = request.cpus_per_task
    if node:
        params["slurm_nodelist"] = node
    if request.whole_node:
        # The whole node, every GPU allocated (--exclusive alone leaves CUDA_VISIBLE_DEVICES
        # unset) and all its memory (else only the default per CPU).
        params.update(gpus_per_node=topo.gpus, slurm_exclusive=True, mem_gb=0)
    else:
        params.update(gpus_per_node=request.gpus, slurm_constraint=topo.fabric)
    executor.update_parameters(**params)
    return executor


def _given_by_slurm(job_id: str, node: str | None, topo, placement: dict, store, timeout_s: float) -> dict:
    """Wait for the job to hold its GPUs; predict them next to the best free set."""
    from wirewise.orchestrator.placement.free import job_gpus
    from wirewise.orchestrator.placement.history import predictor

    deadline = time.monotonic() + timeout_s
    given = job_gpus(job_id, node)
    while given is None and time.monotonic() < deadline:
        time.sleep(START_POLL_S)
        given = job_gpus(job_id, node)
    if given is None:
        return {"warnings": [f"job {job_id} had not started after {timeout_s:g} s: its GPUs are not known yet"]}
    if len(given) != len(placement["gpus"]) or max(given) >= topo.gpus:
        return {"gpus": given, "warnings": [f"Slurm gave GPUs {given}, which do not match this node's wiring"]}
    prediction = predictor(topo, store).predict(given)
    out = {"gpus": given, "cuda_visible_devices": ",".join(map(str, given)),
           "predicted_busbw_gbs": prediction.busbw_gbs, "basis": prediction.basis, "warnings": []}
    best = placement["predicted_busbw_gbs"]
    if best is not None and prediction.busbw_gbs is not None and prediction.busbw_gbs < best:
        out["warnings"].append(
            f"Slurm gave GPUs {','.join(map(str, given))} (predicted {prediction.busbw_gbs:g} GB/s busbw); "
            f"the best free set was {','.join(map(str, placement['gpus']))} ({best:g} GB/s)"
        )
    return out


def record(store, result: dict, request: RunRequest, topo, placement: dict) -> int:
    """One placed_jobs row; returns its id."""
    from wirewise.orchestrator.store.placed_jobs import add_placed_job

    return add_placed_job(
        store, slurm_job_id=result["job_id"], mode=result["mode"], command=result["command"], node=result["node"],
        requested_gpus=request.gpus, gpus=result["gpus"], fingerprint=topo.fingerprint, fabric=topo.fabric,
        constraint=result["constraint"], predicted_busbw_gbs=result["predicted_busbw_gbs"], basis=result["basis"],
        best_free_gpus=placement["gpus"], best_free_busbw_gbs=placement["predicted_busbw_gbs"],
        model=request.model, strategy=result["strategy"], warnings=result["warnings"], folder=str(request.folder),
    )
