"""Stage "track": where a campaign's tasks stand, storing what finished, re-running what did
not, cancelling.

A task's state comes from its folder first (the outcome its last run wrote: ok, oom, failed,
timeout, cancelled) and, for tasks still without one, from its array element's Slurm state:
one sacct call per poll for the whole campaign, never one per task and never submitit's
`job.state` in a loop. An element that ended without the task's outcome left it `cancelled`
(scancel), `timeout` (the time limit), or `missing` (the node or the job died); the local
executor's unfinished tasks are `missing` once no local run is going.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirewise.orchestrator.campaign.folder import FINISHED, CampaignFolder, check_folder
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.campaigns import CampaignInfo, TaskInfo, campaign_info, campaign_tasks, set_statuses

RETRIED = ("missing", "failed", "cancelled", "timeout")
STATES = ("ok", "running", "pending", "oom", "failed", "timeout", "cancelled", "missing")
LOCAL_PID = "local.pid"  # in the campaign folder while `campaign submit` runs it here


@dataclass
class TaskState:
    task_id: str
    status: str
    attempt: int
    element: str | None


@dataclass
class CampaignStatus:
    campaign: CampaignInfo
    tasks: list[TaskState] = field(default_factory=list)
    stored: list[TaskInfo] = field(default_factory=list)  # the task rows the states were read from

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(t.status for t in self.tasks)
        return {state: counted[state] for state in STATES if counted[state]}

    @property
    def done(self) -> bool:
        return all(t.status not in ("running", "pending") for t in self.tasks)

    def to_json(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign.name, "executor": self.campaign.executor, "folder": self.campaign.folder,
            "total": len(self.tasks), "counts": self.counts, "done": self.done,
            "tasks": [t.__dict__ for t in self.tasks],
        }


def campaign_status(store: Store, name: str) -> CampaignStatus:
    """Where each task stands; UserError when the campaign's folder is missing or not its own
    (wirewise.orchestrator.campaign.folder.check_folder), so nothing reads it as "missing"."""
    info = campaign_info(store, name)
    check_folder(Path(info.folder), name)
    folder = CampaignFolder(Path(info.folder))
    tasks = campaign_tasks(store, name)
    states = _element_states(info, tasks)
    running_local = info.executor == "local" and _local_run_alive(folder)
    status = CampaignStatus(info, stored=tasks)
    started: set[str | int | None] = set()  # bundles whose first unfinished task was seen
    for task in tasks:
        outcome = folder.outcome(task.task_id)
        if outcome is not None and outcome["attempt"] >= task.attempts:
            status.tasks.append(TaskState(task.task_id, outcome["status"], outcome["attempt"], task.element))
            continue
        if outcome is None and task.status in FINISHED and not folder.task_dir(task.task_id).is_dir():
            # its folder was deleted after it finished: what was stored stays, it is not "missing"
            status.tasks.append(TaskState(task.task_id, task.status, task.attempts, task.element))
            continue
        where = task.element if info.executor == "slurm" else task.bundle
        state = _unfinished(info.executor, states.get(task.element or ""), running_local, first=where not in started)
        started.add(where)
        status.tasks.append(TaskState(task.task_id, state, task.attempts, task.element))
    return status


def _element_states(info: CampaignInfo, tasks: list[TaskInfo]) -> dict[str, str]:
    """Slurm states of the campaign's elements: one sacct call; squeue only for elements sacct
    does not know (just submitted, or cancelled before they started: then they are not queued)."""
    if info.executor != "slurm" or not info.slurm_arrays:
        return {}
    from wirewise.orchestrator.slurm.cluster import element_states, queued_elements

    states = element_states(info.slurm_arrays)
    unknown = {t.element for t in tasks if t.element and t.element not in states}
    if unknown:
        queued = queued_elements(sorted({e.split("_")[0] for e in unknown}))
        states.update({element: "PENDING" if element in queued else "CANCELLED" for element in unknown})
    return states


def _unfinished(executor: str, element_state: str | None, running_local: bool, first: bool) -> str:
    """The state of a task whose current run has not finished (`first`: the first such task of
    its bundle, the one a running bundle is on)."""
    if executor == "local":
        return ("running" if first else "pending") if running_local else "missing"
    if element_state is None or element_state in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED"):
        return "pending"  # None: submitted a moment ago, not in sacct yet
    if element_state in ("RUNNING", "CONFIGURING", "COMPLETING"):
        return "running" if first else "pending"
    return {"CANCELLED": "cancelled", "TIMEOUT": "timeout"}.get(element_state, "missing")


def _local_run_alive(folder: CampaignFolder) -> bool:
    """Whether the process that runs the campaign here still lives (zombies do not count)."""
    try:
        pid = int((folder.root / LOCAL_PID).read_text())
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return False
    return state != "Z"


def collect_campaign(store: Store, name: str):
    """Store the results of every finished task not stored yet, and each task's state; returns
    (wirewise.orchestrator.record.collect.Collected, CampaignStatus)."""
    from wirewise.orchestrator.record.collect import Collected, collect

    status = campaign_status(store, name)
    folder = CampaignFolder(Path(status.campaign.folder))
    stored = {t.task_id: t for t in status.stored}
    files = [
        folder.result_file(t.task_id, t.attempt) for t in status.tasks
        if t.status in FINISHED and stored[t.task_id].status != t.status and folder.result_file(t.task_id, t.attempt).exists()
    ]
    collected = collect(store, files) if files else Collected()
    set_statuses(store, {t.task_id: t.status for t in status.tasks if stored[t.task_id].status != t.status})
    return collected, status


def to_retry(status: CampaignStatus, include_oom: bool, max_attempts: int) -> tuple[list, list]:
    """(runs to submit again as (task id, next attempt), tasks left out for the attempt limit)."""
    wanted = RETRIED + (("oom",) if include_oom else ())
    attempts = {t.task_id: t.attempts for t in status.stored}
    retry, exhausted = [], []
    for task in status.tasks:
        if task.status not in wanted:
            continue
        if attempts[task.task_id] >= max_attempts:
            exhausted.append(task.task_id)
        else:
            retry.append((task.task_id, attempts[task.task_id] + 1))
    return retry, exhausted
