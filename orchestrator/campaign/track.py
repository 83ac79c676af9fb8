"""Stage "track": where a campaign's tasks stand, storing what finished, re-running what did
not, cancelling.

A task's state comes from its folder first (the outcome its last run wrote: ok, oom, failed,
timeout, cancelled) and, for tasks still without one, from its element's state as the
campaign's executor reports it: one query per poll for the whole campaign (for Slurm, one sacct
call), never one per task and never submitit's `job.state` in a loop. The outcomes are read
from one listing of the folder's outcomes/ (folder.CampaignFolder.outcome_index); a task's own
folder is read only where that does not settle it and its element has ended. An element that ended
without the task's outcome left it `cancelled` (scancel), `timeout` (the time limit), or
`missing` (the node, the job or the local run died).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirewise.orchestrator.campaign.folder import FINISHED, CampaignFolder, FolderUnusable, check_folder
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.campaigns import CampaignInfo, TaskInfo, campaign_info, campaign_tasks, set_statuses

RETRIED = ("missing", "failed", "cancelled", "timeout")
STATES = ("ok", "running", "pending", "oom", "failed", "timeout", "cancelled", "missing")


@dataclass
class TaskState:
    task_id: str
    status: str
    attempt: int
    element: str | None
    node: str | None = None  # the nodes the task is pinned to (fleet campaigns, pair tests)


@dataclass
class CampaignStatus:
    campaign: CampaignInfo
    tasks: list[TaskState] = field(default_factory=list)
    stored: list[TaskInfo] = field(default_factory=list)  # the task rows the states were read from
    note: str | None = None  # set where the states are the stored ones alone: why (the folder is gone)
    warnings: list[str] = field(default_factory=list)  # where the scheduler put running elements against what they asked

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(t.status for t in self.tasks)
        return {state: counted[state] for state in STATES if counted[state]}

    @property
    def done(self) -> bool:
        return all(t.status not in ("running", "pending") for t in self.tasks)

    @property
    def by_node(self) -> dict[str, dict[str, int]]:
        """Tasks per state on each node they are pinned to, in the order the nodes first appear
        (empty for a campaign whose tasks go wherever the scheduler puts them)."""
        counted: dict[str, Counter] = {}
        for task in self.tasks:
            if task.node:
                counted.setdefault(task.node, Counter())[task.status] += 1
        return {node: {state: c[state] for state in STATES if c[state]} for node, c in counted.items()}

    def to_json(self) -> dict[str, Any]:
        shown = {
            "campaign": self.campaign.name, "executor": self.campaign.executor, "folder": self.campaign.folder,
            "total": len(self.tasks), "counts": self.counts, "done": self.done,
            "tasks": [t.__dict__ for t in self.tasks],
        }
        if self.note:
            shown["note"] = self.note
        if self.warnings:
            shown["warnings"] = self.warnings
        nodes = self.by_node
        return {**shown, "nodes": nodes} if nodes else shown


def campaign_status(store: Store, name: str, stored_if_unusable: bool = False) -> CampaignStatus:
    """Where each task stands; UserError when the campaign's folder is missing or not its own
    (wirewise.orchestrator.campaign.folder.check_folder), so nothing reads it as "missing".
    `stored_if_unusable`: instead, the statuses the store holds, with a note saying why (what
    `campaign status` shows of a campaign whose folder was deleted)."""
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.executor.core import PENDING, RUNNING

    info = campaign_info(store, name)
    try:
        check_folder(Path(info.folder), name)
    except FolderUnusable as exc:
        if not stored_if_unusable:
            raise
        tasks = campaign_tasks(store, name)
        return CampaignStatus(info, [TaskState(t.task_id, t.status, t.attempts, t.element, t.node) for t in tasks], tasks,
                              note=f"{str(exc).split(';')[0]}: these are the statuses stored when it was last read")
    folder = CampaignFolder(Path(info.folder))
    tasks = campaign_tasks(store, name)
    index = folder.outcome_index()
    outcomes = ({task.task_id: folder.outcome(task.task_id) for task in tasks} if index is None
                else {task.task_id: _named(index.get(task.task_id)) for task in tasks})
    unfinished = [task for task in tasks if not _finished(outcomes[task.task_id], task)]
    executor = executor_named(info.executor)
    states = executor.states([task.element for task in unfinished]) if unfinished else {}
    if index is not None:  # what outcomes/ does not settle, a task's folder may: a run that died
        # between its result and its outcome, or an outcome named twice. Not while its element runs or
        # waits (each of its runs names its outcome), so a live campaign is read in one listing.
        outcomes.update({task.task_id: folder.outcome(task.task_id) for task in unfinished
                         if states.get(task.element) not in (PENDING, RUNNING)})
    # a task whose folder was deleted after it finished keeps what was stored: it is not "missing"
    kept = {task.task_id for task in unfinished if outcomes[task.task_id] is None and task.status in FINISHED
            and not folder.task_dir(task.task_id).is_dir()}
    running = sorted({element for element, state in states.items() if element and state == RUNNING})
    status = CampaignStatus(info, stored=tasks, warnings=sorted(set(executor.allocation_problems(running).values())) if running else [])
    started: set[tuple] = set()  # elements whose first unfinished task was seen
    for task in tasks:
        outcome = outcomes[task.task_id]
        if _finished(outcome, task):
            status.tasks.append(TaskState(task.task_id, outcome["status"], outcome["attempt"], task.element, task.node))
            continue
        if task.task_id in kept:
            status.tasks.append(TaskState(task.task_id, task.status, task.attempts, task.element, task.node))
            continue
        where = (task.element, task.bundle)  # a local run takes every bundle: the bundle tells them apart
        state = _unfinished(states.get(task.element), first=where not in started)
        started.add(where)
        status.tasks.append(TaskState(task.task_id, state, task.attempts, task.element, task.node))
    return status


def _named(named: tuple[int, str] | None) -> dict | None:
    """An outcome as outcomes/ names it, as CampaignFolder.outcome reads it."""
    return None if named is None else {"status": named[1], "attempt": named[0]}


def _finished(outcome: dict | None, task: TaskInfo) -> bool:
    """The task's current attempt has written its outcome."""
    return outcome is not None and outcome["attempt"] >= task.attempts


def _unfinished(element_state: str | None, first: bool) -> str:
    """The state of a task whose current run has not finished (`first`: the first such task of
    its element, the one a running element is on)."""
    from wirewise.orchestrator.executor.core import CANCELLED, PENDING, RUNNING, TIMEOUT

    if element_state in (None, PENDING):
        return "pending"  # None: being submitted this moment
    if element_state == RUNNING:
        return "running" if first else "pending"
    return {CANCELLED: "cancelled", TIMEOUT: "timeout"}.get(element_state, "missing")


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
