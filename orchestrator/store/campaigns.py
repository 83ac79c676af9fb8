"""Store campaigns and tasks: a campaign row with its folder and executor, one task row per
task (its key is the task id), updated as tasks are submitted, run and collected. A `bench`
run is stored as a task without a campaign."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wirewise.errors import UserError
from wirewise.orchestrator.store import Store


@dataclass
class CampaignInfo:
    name: str
    folder: str
    executor: str
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
    from sqlalchemy import insert, select

    from wirewise.orchestrator.store.schema import CAMPAIGNS

    C = CAMPAIGNS.c
    with store.session() as session:
        if session.scalar(select(C.id).where(C.name == name)) is not None:
            raise UserError(f"campaign {name!r} exists already: follow it with `wirewise campaign status {name}`, "
                            f"re-run what failed with `campaign resume {name}`, or give the spec another name")
        campaign_id = session.execute(
            insert(CAMPAIGNS).values(name=name, spec=spec, folder=folder, executor=executor)
        ).inserted_primary_key[0]
        _insert_tasks(session, campaign_id, tasks)


def add_tasks(store: Store, name: str, tasks) -> None:
    """More planned tasks for a campaign already recorded (a pair test's next round)."""
    from sqlalchemy import select

    from wirewise.orchestrator.store.schema import CAMPAIGNS

    with store.session() as session:
        campaign_id = session.scalar(select(CAMPAIGNS.c.id).where(CAMPAIGNS.c.name == name))
        _insert_tasks(session, campaign_id, tasks)


def _insert_tasks(session, campaign_id: int, tasks) -> None:
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import TASKS

    rows = [
        dict(key=t.spec.task_id, campaign_id=campaign_id, workload=t.spec.workload, params=t.spec.params,
             gpus=t.spec.gpus, node=",".join(t.spec.hosts) or None, placement=t.placement, transport=t.transport,
             repeat=t.repeat, attempts=1)
        for t in tasks
    ]
    if rows:
        session.execute(insert(TASKS), rows)


def campaign_info(store: Store, name: str) -> CampaignInfo:
    with store.read() as db:
        d, p = db.dialect, db.params()
        row = db.rows(f"SELECT name, folder, executor, spec, created_at FROM campaigns WHERE name = {p(name)}", p)
        if not row:
            known = db.column("SELECT name FROM campaigns ORDER BY created_at DESC LIMIT 5")
            hint = f" (recent: {', '.join(known)})" if known else " (none stored yet: `wirewise campaign submit SPEC`)"
            raise UserError(f"no campaign named {name!r}{hint}")
    name, folder, executor, spec, created_at = row[0]
    return CampaignInfo(name, folder or "", executor or "local", d.json(spec), d.when(created_at))


def campaign_tasks(store: Store, name: str) -> list[TaskInfo]:
    with store.read() as db:
        p = db.params()
        rows = db.rows(
            "SELECT t.key, t.status, t.attempts, t.bundle, t.slurm_job_id, t.node FROM tasks t "
            f"JOIN campaigns c ON c.id = t.campaign_id WHERE c.name = {p(name)} ORDER BY t.id", p,
        )
    return [TaskInfo(*row) for row in rows]


def set_submitted(store: Store, elements: dict[str, tuple[int, str | None]]) -> None:
    """{task id: (bundle, element id or None)} of one submission, the element as its executor
    names it (a Slurm array element ARRAY_INDEX, which names its array; a local run)."""
    if not elements:
        return
    from sqlalchemy import bindparam

    with store.session() as session:
        session.execute(_by_key(bundle=bindparam("b"), slurm_job_id=bindparam("j")), [
            {"k": key, "b": bundle, "j": element} for key, (bundle, element) in elements.items()
        ])


def set_statuses(store: Store, statuses: dict[str, str], attempts: dict[str, int] | None = None) -> None:
    """Task statuses (and new attempt numbers, for a resume) by task id."""
    if not statuses and not attempts:
        return
    from sqlalchemy import bindparam

    attempts = attempts or {}
    with store.session() as session:
        if statuses:
            session.execute(_by_key(status=bindparam("v")), [{"k": k, "v": v} for k, v in statuses.items()])
        if attempts:
            session.execute(_by_key(attempts=bindparam("v")), [{"k": k, "v": v} for k, v in attempts.items()])


def _by_key(**values):
    """An UPDATE of the task whose key is the parameter "k" (run once per parameter set)."""
    from sqlalchemy import bindparam, update

    from wirewise.orchestrator.store.schema import TASKS

    return update(TASKS).where(TASKS.c.key == bindparam("k")).values(**values)


def forget_campaign(store: Store, name: str, remove_results: bool = False) -> dict[str, int]:
    """Remove a campaign's record and its task rows, and its result rows when asked, in one
    transaction; returns how many rows of each went. Its folder is not touched."""
    from sqlalchemy import delete, select

    from wirewise.orchestrator.store.schema import CAMPAIGNS, RESULTS, TASKS

    with store.session() as session:
        campaign_id = session.scalar(select(CAMPAIGNS.c.id).where(CAMPAIGNS.c.name == name))
        if campaign_id is None:
            raise UserError(f"no campaign named {name!r}")
        tasks = session.execute(delete(TASKS).where(TASKS.c.campaign_id == campaign_id)).rowcount
        session.execute(delete(CAMPAIGNS).where(CAMPAIGNS.c.id == campaign_id))
        results = session.execute(delete(RESULTS).where(RESULTS.c.campaign == name)).rowcount if remove_results else 0
    return {"tasks": tasks, "results": results}


def list_campaigns(store: Store) -> list[dict[str, Any]]:
    """Every campaign, newest first, with its task counts by stored status."""
    with store.read() as db:
        campaigns = db.rows("SELECT id, name, executor, created_at, folder FROM campaigns ORDER BY created_at DESC")
        counts = db.rows("SELECT campaign_id, status, count(*) FROM tasks GROUP BY campaign_id, status")
        when = db.dialect.when
    by_campaign: dict[int, dict[str, int]] = {}
    for campaign_id, status, count in counts:
        by_campaign.setdefault(campaign_id, {})[status] = count
    return [
        {"name": name, "executor": executor, "created_at": when(created_at), "folder": folder,
         "tasks": sum(by_campaign.get(id_, {}).values()), "counts": by_campaign.get(id_, {})}
        for id_, name, executor, created_at, folder in campaigns
    ]


def record_task(store: Store, spec, status: str) -> None:
    """A task run outside a campaign (`wirewise bench ...`): one row per task key; running the
    same task again counts one more attempt."""
    from sqlalchemy import insert, update

    from wirewise.orchestrator.store.schema import TASKS

    T = TASKS.c
    with store.session() as session:
        updated = session.execute(
            update(TASKS).where(T.key == spec.task_id).values(status=status, attempts=T.attempts + 1)
        ).rowcount
        if not updated:
            session.execute(insert(TASKS).values(
                key=spec.task_id, workload=spec.workload, params=spec.params, gpus=spec.gpus, node=spec.node,
                placement=spec.labels.get("placement"),
                transport=spec.labels.get("transport") or spec.params.get("transport"), status=status, attempts=1,
            ))
