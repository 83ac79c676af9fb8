"""Stage "run", for campaigns: one array element runs a bundle of tasks one after another on
the node it holds, each on its planned GPUs, through the one entry point (wirewise.jobs.supervise).

A bundle is a list of (task id, attempt). A task is skipped when a run of that attempt or a
later one has finished (its result file exists, whatever its status), so a requeued bundle
(preemption: submitit calls `checkpoint`, which resubmits the same bundle) measures nothing
twice and loses nothing. A run cut short (preempted, node lost) runs again as the next attempt.
A multi-node task's element runs this on each of its nodes; they agree on one attempt (the
job step claims it, CampaignFolder.claim_attempt) and node 0 writes the outcome.
A cancelled task (scancel's SIGTERM, Ctrl-C) ends the bundle: the rest do not start.

Every executor runs `Bundle`: the local one here, in this process; on Slurm, submitit pickles it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import submitit

from wirewise.orchestrator.campaign.folder import CampaignFolder
from wirewise.jobenv import read_job_env

Attempt = tuple[str, int]  # (task id, attempt number): one go of a task
OnTask = Callable[[str, str], None]  # (task id, status) after each task


def run_bundle(folder: str | Path, runs: list[Attempt], on_task: OnTask | None = None) -> dict[str, str]:
    """Run the bundle's tasks here; returns {task id: status} of what it ran."""
    from wirewise.jobs.supervise import run_task
    from wirewise.runs import RunPaths

    campaign = CampaignFolder(Path(folder))
    job = read_job_env()
    ran: dict[str, str] = {}
    for task_id, attempt in runs:
        outcome = campaign.outcome(task_id)
        if outcome is not None and outcome["attempt"] >= attempt:
            campaign.name_outcome(task_id, outcome["status"], outcome["attempt"])  # where the requeue came between
            continue  # finished before a requeue
        attempt = campaign.claim_attempt(task_id, attempt, job.step_key)
        spec = campaign.read_task(task_id)
        spec = spec.model_copy(update={"attempt": attempt, "device_ids": job.device_ids(spec.gpus)})
        run_folder = campaign.attempt_dir(task_id, attempt)
        result = run_task(spec, run_folder)
        if result != RunPaths(run_folder).result:
            continue  # another node of a multi-node task: node 0 writes the result
        status = json.loads(result.read_text())["status"]
        campaign.write_outcome(task_id, status, attempt)
        ran[task_id] = status
        if on_task is not None:
            on_task(task_id, status)
        if status == "cancelled":
            break
    return ran


class Bundle(submitit.helpers.Checkpointable):
    """What an array element runs. Checkpointable: on preemption (or the time-limit warning),
    submitit resubmits the same call, and run_bundle skips what finished. `on_task` is for an
    executor that runs bundles in this process (a progress bar); none travels to a node.

    Elements are submitted without Slurm's own requeue (a lost node leaves their tasks
    `missing`, for `campaign resume` to place on nodes that are up); a preempted one turns it
    back on for itself here, just before submitit requeues it."""

    def __init__(self, on_task: OnTask | None = None) -> None:
        self.on_task = on_task

    def __call__(self, folder: str, runs: list[Attempt]) -> dict[str, str]:
        return run_bundle(folder, runs, self.on_task)

    def checkpoint(self, *args, **kwargs):
        from wirewise.orchestrator.slurm.cluster import allow_requeue

        job_id = read_job_env().job_id
        if job_id is not None:
            allow_requeue(job_id)
        return super().checkpoint(*args, **kwargs)
