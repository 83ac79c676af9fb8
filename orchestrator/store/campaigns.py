"""Store campaigns and tasks: a campaign row with its folder and Slurm arrays, one task row
per task (its key is the task id), updated as tasks are submitted, run and collected. A
`bench` run is stored as a task without a campaign."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select

from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import CampaignRow, TaskRow


@dataclass
class CampaignInfo:
    name: str
    folder: str
    executor: str
    slurm_arrays: list[str]
    spec: dict[str, Any]
    created_at: Any


@dataclass
class TaskInfo:
    task_id: str
    status: str
    attempts: int
    bundle: int | None
    element: str | None  # as its executor names it: a Slurm array element ARRAY_INDEX, a local run
    node: str | None = None  # the nodes it is pinned to (a fleet campaign's node, a pair test's two), comma-separated


def create_campaign(store: Store, name: str, spec: dict[str, Any], folder: str, executor: str, tasks) -> None:
    """Record a campaign and its planned tasks (wirewise.orchestrator.campaign.plan.PlannedTask),
    all in one transaction."""
    with store.session() as session:
        if session.scalar(select(CampaignRow.id).where(CampaignRow.name == name)) is not None:
            raise UserError(f"campaign {name!r} exists already: follow it with `wirewise campaign status {name}`, "
                            f"re-run what failed with `campaign resume {name}`, or give the spec another name")
        campaign = CampaignRow(name=name, spec=spec, folder=folder, executor=executor, slurm_arrays=[])
        session.add(campaign)
        session.flush()
        session.add_all(_task_rows(campaign.id, tasks))


def add_tasks(store: Store, name: str, tasks) -> None:
    """More planned tasks for a campaign already recorded (a pair test's next round)."""
    with store.session() as session:
        campaign_id = session.scalar(select(CampaignRow.id).where(CampaignRow.name == name))
        session.add_all(_task_rows(campaign_id, tasks))


def _task_rows(campaign_id: int, tasks) -> list[TaskRow]:
    return [
        TaskRow(key=t.spec.task_id, campaign_id=campaign_id, workload=t.spec.workload, params=t.spec.params,
                gpus=t.spec.gpus, node=",".join(t.spec.hosts) or None, placement=t.placement, transport=t.transport,
                repeat=t.repeat, attempts=1)
        for t in tasks
    ]


def campaign_info(store: Store, name: str) -> CampaignInfo:
    with store.read() as session:
        row = session.scalar(select(CampaignRow).where(CampaignRow.name == name))
        if row is None:
            known = session.scalars(select(CampaignRow.name).order_by(CampaignRow.created_at.desc()).limit(5)).all()
            hint = f" (recent: {', '.join(known)})" if known else " (none stored yet: `wirewise campaign submit SPEC`)"
            raise UserError(f"no campaign named {name!r}{hint}")
        return CampaignInfo(row.name, row.folder or "", row.executor or "local", list(row.slurm_arrays or []),
                            row.spec, row.created_at)


def campaign_tasks(store: Store, name: str) -> list[TaskInfo]:
    with store.read() as session:
        rows = session.execute(
            select(TaskRow.key, TaskRow.status, TaskRow.attempts, TaskRow.bundle, TaskRow.slurm_job_id, TaskRow.node)
            .join(CampaignRow, CampaignRow.id == TaskRow.campaign_id)
            .where(CampaignRow.name == name)
            .order_by(TaskRow.id)
        ).all()
    return [TaskInfo(*row) for row in rows]


def set_submitted(store: Store, name: str, elements: dict[str, tuple[int, str | None]], arrays: list[str]) -> None:
    """{task id: (bundle, element id or None)} of one submission, the element as its executor
    names it (a Slurm array element ARRAY_INDEX, a local run); arrays: its Slurm array ids."""
    with store.session() as session:
        campaign = session.scalar(select(CampaignRow).where(CampaignRow.name == name))
        campaign.slurm_arrays = [*campaign.slurm_arrays, *arrays]
        rows = session.scalars(select(TaskRow).where(TaskRow.key.in_(list(elements))))
        for row in rows:
            row.bundle, row.slurm_job_id = elements[row.key]
            array = row.slurm_job_id.split("_")[0] if row.slurm_job_id else None
            row.slurm_array_id = array if array in arrays else None


def forget_campaign(store: Store, name: str) -> None:
    """Remove a campaign's row and its task rows, in one transaction (stored results stay)."""
    with store.session() as session:
        campaign = session.scalar(select(CampaignRow).where(CampaignRow.name == name))
        if campaign is not None:
            session.execute(delete(TaskRow).where(TaskRow.campaign_id == campaign.id))
            session.delete(campaign)


def set_statuses(store: Store, statuses: dict[str, str], attempts: dict[str, int] | None = None) -> None:
    """Task statuses (and new attempt numbers, for a resume) by task id."""
    if not statuses and not attempts:
        return
    attempts = attempts or {}
    with store.session() as session:
        for row in session.scalars(select(TaskRow).where(TaskRow.key.in_(list({*statuses, *attempts})))):
            row.status = statuses.get(row.key, row.status)
            row.attempts = attempts.get(row.key, row.attempts)


def list_campaigns(store: Store) -> list[dict[str, Any]]:
    """Every campaign, newest first, with its task counts by stored status."""
    with store.read() as session:
        campaigns = session.scalars(select(CampaignRow).order_by(CampaignRow.created_at.desc())).all()
        counts = session.execute(
            select(TaskRow.campaign_id, TaskRow.status, func.count()).group_by(TaskRow.campaign_id, TaskRow.status)
        ).all()
    by_campaign: dict[int, dict[str, int]] = {}
    for campaign_id, status, count in counts:
        by_campaign.setdefault(campaign_id, {})[status] = count
    return [
        {"name": c.name, "executor": c.executor, "created_at": c.created_at, "folder": c.folder,
         "tasks": sum(by_campaign.get(c.id, {}).values()), "counts": by_campaign.get(c.id, {})}
        for c in campaigns
    ]


def record_task(store: Store, spec, status: str) -> None:
    """A task run outside a campaign (`wirewise bench ...`): one row per task key; running the
    same task again counts one more attempt."""
    with store.session() as session:
        row = session.scalar(select(TaskRow).where(TaskRow.key == spec.task_id))
        if row is None:
            row = TaskRow(key=spec.task_id, workload=spec.workload, params=spec.params, gpus=spec.gpus,
                          node=spec.node, placement=spec.labels.get("placement"),
                          transport=spec.labels.get("transport") or spec.params.get("transport"), attempts=0)
            session.add(row)
        row.status = status
        row.attempts += 1
