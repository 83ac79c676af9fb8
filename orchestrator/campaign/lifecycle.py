"""A campaign's life, as the CLI's campaign commands and the health checks and pair tests that
run campaigns call it: plan a spec, submit it (record, write its folder, dispatch its bundles),
resume, cancel, forget. Each flow takes a Store and plain values and returns data; where the
elements run is the executor's (wirewise.orchestrator.executor: local, slurm, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirewise.errors import UserError

if TYPE_CHECKING:  # imported by every campaign command: keep it light
    from wirewise.orchestrator.campaign.plan import Plan
    from wirewise.orchestrator.campaign.spec import CampaignSpec
    from wirewise.topology import Topology


def target_topology(spec: CampaignSpec, topology_file: str | None, node: str | None, db: str | None) -> Topology | None:
    """The wiring to plan on: a saved `nvidia-smi topo -m`, a stored node, the stored wiring
    the spec's target.fingerprint names, or (an executor that runs here) this machine; None: no
    GPU here, so CPU ranks."""
    from wirewise.orchestrator.executor import executor_named
    from wirewise.topology import read_topology

    if topology_file and node:
        raise UserError("give --topology-file or --node, not both")
    if topology_file:
        return read_topology(topology_file)
    if node or spec.target.fingerprint:
        from wirewise.orchestrator.store import Store
        from wirewise.orchestrator.store.topology import load_topology

        return load_topology(Store.existing(db), node=node, fingerprint=None if node else spec.target.fingerprint)
    if not executor_named(spec.target.executor).runs_here:
        raise UserError("which nodes does this campaign run on? Plan on their wiring: --topology-file FILE "
                        "(`nvidia-smi topo -m` of one), --node NAME (stored with `topo save`), or target.fingerprint")
    try:
        return read_topology(None)
    except UserError:
        return None  # no GPU or driver here: CPU ranks


def plan_spec(spec_path: str, topology_file: str | None = None, node: str | None = None, db: str | None = None,
              name: str | None = None, gpus: list[int] | None = None, include_down: bool = False,
              probe: bool = False, on_probe=None) -> tuple[CampaignSpec, Plan]:
    """Load a spec (under another name, or on other GPU counts, when given) and plan it. A fleet
    spec (target.scope each-node) is planned on every node's stored wiring; `probe`: nodes whose
    wiring is not stored yet are surveyed first (one short job each)."""
    from wirewise.orchestrator.campaign.plan import plan_campaign
    from wirewise.orchestrator.campaign.spec import load_spec

    spec = load_spec(spec_path)
    if name is not None or gpus is not None:
        spec = spec.overridden(name, gpus)
    if spec.target.scope == "each-node":
        if topology_file or node:
            raise UserError("target.scope each-node plans every node on its own stored wiring: drop --topology-file and --node")
        return spec, plan_fleet_spec(spec, db, include_down, probe, on_probe)
    return spec, plan_campaign(spec, target_topology(spec, topology_file, node, db))


def plan_fleet_spec(spec: CampaignSpec, db: str | None, include_down: bool, probe: bool, on_probe=None):
    """The nodes of the target from the executor, their wirings from the store (surveyed first
    where missing, given `probe`), planned per wiring."""
    from wirewise.orchestrator.campaign.each_node import fleet_nodes, plan_fleet
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import node_topologies

    nodes = fleet_nodes(spec)
    store = Store(db)
    plan = plan_fleet(spec, nodes, node_topologies(store, [n.name for n in nodes]), include_down)
    if probe and plan.unsurveyed:
        from wirewise.orchestrator.survey import survey_nodes

        found = survey_nodes(store, plan.unsurveyed, spec.target.executor, include_down, on_progress=on_probe)
        plan = plan_fleet(spec, nodes, node_topologies(store, [n.name for n in nodes]), include_down, found.failed)
    return plan


def campaign_folder(spec: CampaignSpec) -> Path:
    from wirewise.runs import RunsRoot

    folder = Path(spec.target.folder) if spec.target.folder else RunsRoot.configured().campaign(spec.name)
    return folder.expanduser().resolve()


def submission_for(spec: CampaignSpec, gpus_per_node: int | None, runs, executor: str, root: Path,
                   dry_run: bool = False, pins=None, exclude: str | None = None):
    """The bundles and arrays for these runs, and the job each element asks for (checked here,
    before anything is recorded). `pins`: task id -> Pin, for tasks pinned to nodes."""
    from dataclasses import replace

    from wirewise.orchestrator.campaign.submit import check_room, job_request, prepare
    from wirewise.orchestrator.executor import executor_named

    runner = executor_named(executor)
    request = job_request(spec.target, spec.name, gpus_per_node, root)
    if exclude:
        request = replace(request, exclude=exclude)
    if not pins and not dry_run:
        check_room(runner, request)
    return prepare(runs, spec.target, request, runner, dry_run, pins)


# Where to change what Slurm refused, in the spec's terms (after its reason and what was asked).
REFUSED_CAMPAIGN = ("change the spec's target (partition, constraint, nodelist, nodes, time) or plan on the wiring "
                    "of the nodes it runs on (--topology-file or --node)")


def submit_spec(store, spec: CampaignSpec, plan: Plan, executor: str, on_task=None) -> dict[str, Any]:
    """Record the campaign and its tasks, write its folder, submit (Slurm) or run (local). The
    folder is claimed right after the record (a name taken is said first). When the folder
    cannot be claimed (not empty, another campaign's, not creatable) or the executor refuses the
    submission, nothing stays recorded or written: the same spec can be submitted again once
    its target is fixed."""
    from wirewise.orchestrator.executor.core import SubmissionRefused

    if not plan.tasks:
        raise UserError(f"campaign {spec.name!r} has no task to run: {_why_none(plan)} (see `campaign plan`)")
    gpus = plan.topology.gpus if plan.topology is not None else None
    root = campaign_folder(spec)
    submission = submission_for(spec, gpus, [(t.spec.task_id, 1) for t in plan.tasks], executor, root,
                                pins=plan.pins(spec.target.partition))
    made_root = record_campaign(store, spec, root, executor, plan.to_json(), plan.tasks)
    try:
        report = dispatch(store, spec.name, submission, root, executor, on_task)
        return {**report, "left_out": _listed(plan.left_out)} if plan.left_out else report
    except SubmissionRefused as exc:
        unrecord_campaign(store, spec.name, root, [t.spec.task_id for t in plan.tasks], made_root)
        raise UserError(f"campaign {spec.name}: {exc}; {REFUSED_CAMPAIGN}. Nothing was recorded") from None


def record_campaign(store, spec: CampaignSpec, root: Path, executor: str, plan_doc: dict[str, Any], tasks) -> bool:
    """Record a campaign and its planned tasks, then claim and write its folder (so a name taken
    is said first); returns whether the folder was made for it. When the folder cannot be
    claimed (not empty, another campaign's, not creatable) nothing stays recorded."""
    from wirewise.orchestrator.campaign.folder import write_campaign
    from wirewise.orchestrator.store.campaigns import create_campaign, forget_campaign

    doc = spec.model_dump(mode="json", exclude_unset=True)
    create_campaign(store, spec.name, doc, str(root), executor, tasks)
    try:
        return write_campaign(root, spec.name, doc, plan_doc, [task.spec for task in tasks])
    except BaseException:
        forget_campaign(store, spec.name)
        raise


def unrecord_campaign(store, name: str, root: Path, task_ids: list[str], made_root: bool) -> None:
    """Undo record_campaign for a submission that did not go out: the record and its tasks' rows,
    and what was written in the folder (all of it, when it was made for the campaign)."""
    from wirewise.orchestrator.campaign.folder import CampaignFolder
    from wirewise.orchestrator.store.campaigns import forget_campaign

    forget_campaign(store, name)
    CampaignFolder(root).remove_written(task_ids, whole=made_root)


def _why_none(plan) -> str:
    if plan.left_out and not plan.skipped:
        said = "; ".join(f"{n}: {r}" for n, r in list(plan.left_out.items())[:3])
        return f"no node to run on ({said}{' ...' if len(plan.left_out) > 3 else ''})"
    return "every combination was skipped"


def _listed(reasons: dict[str, str]) -> list[dict[str, str]]:
    return [{"node": node, "reason": reason} for node, reason in reasons.items()]


def dispatch(store, name: str, submission, root: Path, executor: str, on_task=None) -> dict[str, Any]:
    """Send a submission's bundles on their way, recording where each task went before it can
    start; an executor that runs here runs them now, then collects. When one array is refused,
    the arrays already sent are cancelled, and SubmissionRefused goes up."""
    from wirewise.orchestrator.campaign.bundle import Bundle
    from wirewise.orchestrator.campaign.track import collect_campaign
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.executor.core import SubmissionRefused
    from wirewise.orchestrator.store.campaigns import set_submitted

    runner = executor_named(executor)
    ran: dict[str, str] = {}

    def on_each(task_id: str, status: str) -> None:
        ran[task_id] = status
        if on_task is not None:
            on_task(task_id, status)

    bundle = Bundle(on_each if runner.runs_here else None)  # a callback cannot travel to a node
    sent: list[str] = []
    arrays: list[str] = []

    def record(indices: range):
        def on_submitted(submitted) -> None:
            placed = {tid: (i, element) for i, element in zip(indices, submitted.elements) for tid, _ in submission.bundles[i]}
            set_submitted(store, placed)
            sent.extend(submitted.elements)
            arrays.extend([submitted.array] if submitted.array else [])
        return on_submitted

    try:
        for number, indices in enumerate(submission.arrays):
            elements = [(str(root), submission.bundles[i]) for i in indices]
            runner.submit(submission.request_of(number), bundle, elements, record(indices), until=_cancelled)
    except SubmissionRefused:
        if sent:
            runner.cancel(sent)
        raise
    if not runner.runs_here:
        return {"campaign": name, "executor": executor, "folder": str(root), "arrays": sorted(arrays), **submission.to_json()}
    collected, status = collect_campaign(store, name)
    return {"campaign": name, "executor": executor, "folder": str(root), "ran": len(ran),
            "stored_records": collected.new, "counts": status.counts, "interrupted": _cancelled(ran),
            **submission.to_json()}


def _cancelled(ran: dict[str, str]) -> bool:
    """A bundle that ended with a cancelled task (Ctrl-C, SIGTERM) ends the run here."""
    return "cancelled" in ran.values()


def resume_campaign(store, name: str, include_oom: bool, max_attempts: int, on_task=None) -> dict[str, Any]:
    """Submit again exactly the tasks that are missing, failed, cancelled or timed out (and oom
    when asked), each as its next attempt, up to max_attempts runs per task, on nodes that take
    new work: a task pinned to a node Slurm reports down or drained stays as it is (said per
    node, for a later resume), the others go anywhere but such nodes. When the executor
    refuses, the tasks keep the statuses and attempts they had."""
    from wirewise.orchestrator.campaign.folder import missing_task_specs, read_plan_node
    from wirewise.orchestrator.campaign.spec import parse_spec
    from wirewise.orchestrator.campaign.submit import on_live_nodes
    from wirewise.orchestrator.campaign.track import collect_campaign, to_retry
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.executor.core import SubmissionRefused
    from wirewise.orchestrator.store.campaigns import set_statuses, set_submitted

    _, status = collect_campaign(store, name)
    info = status.campaign
    if not status.done:
        raise UserError(f"campaign {name!r} still has tasks running or pending: resume once they end "
                        f"(`wirewise campaign status {name} --watch`), or cancel it first")
    retry, exhausted = to_retry(status, include_oom, max_attempts)
    summary: dict[str, Any] = {"campaign": name, "resubmitted": len(retry), "attempt_limit_reached": exhausted}
    if not retry:
        return summary
    spec = parse_spec(info.spec, f"campaign {name}")
    node = read_plan_node(Path(info.folder))
    lost = missing_task_specs(Path(info.folder), [task_id for task_id, _ in retry])
    if lost:  # before any attempt is counted: a run without its spec.json cannot start
        raise UserError(f"campaign folder {info.folder} has lost the spec.json of {len(lost)} task(s) to resubmit "
                        f"({lost[0]}, ...); the stored results are kept; `wirewise campaign forget {name}` removes "
                        "the campaign's records, to submit it again")
    retry, pins, exclude, waiting = on_live_nodes(spec.target, executor_named(info.executor), retry, status.stored)
    summary.update(resubmitted=len(retry), **({"left_out": _listed(waiting)} if waiting else {}),
                   **({"excluded": exclude} if exclude else {}))
    if not retry:
        return summary
    submission = submission_for(spec, node.get("gpus"), retry, info.executor, Path(info.folder), pins=pins,
                                exclude=exclude)
    retried = dict(retry)
    before = [t for t in status.stored if t.task_id in retried]  # where each task was sent, its attempts
    statuses = {t.task_id: t.status for t in status.tasks if t.task_id in retried}  # as collect just stored them
    set_statuses(store, {tid: "pending" for tid in retried}, retried)
    try:
        return {**summary, **dispatch(store, name, submission, Path(info.folder), info.executor, on_task)}
    except SubmissionRefused as exc:
        set_statuses(store, statuses, {t.task_id: t.attempts for t in before})
        set_submitted(store, {t.task_id: (t.bundle, t.element) for t in before})
        raise UserError(f"campaign {name}: {exc}; {REFUSED_CAMPAIGN}. Its tasks are as they were") from None


def forget(store, name: str, remove_results: bool) -> dict[str, Any]:
    """Remove a campaign's records (and its results, when asked) from the store; its folder
    stays on disk. Refused while its folder shows tasks still running or pending; a campaign
    whose folder is gone (or unreadable) can always be forgotten."""
    from wirewise.orchestrator.campaign.track import campaign_status
    from wirewise.orchestrator.store.campaigns import campaign_info, forget_campaign

    info = campaign_info(store, name)
    try:
        running = not campaign_status(store, name).done
    except UserError:  # its folder is missing or not its own, or Slurm cannot be asked
        running = False
    if running:
        raise UserError(f"campaign {name!r} still has tasks running or pending: `wirewise campaign cancel {name}` first")
    removed = forget_campaign(store, name, remove_results)
    return {"campaign": name, "tasks_removed": removed["tasks"], "results_removed": removed["results"],
            "results_kept": not remove_results, "folder": info.folder}


def cancel_campaign(store, name: str) -> dict[str, Any]:
    """Stop every element of the campaign still pending or running (scancel its arrays, or stop
    the run here)."""
    from wirewise.orchestrator.campaign.track import campaign_status
    from wirewise.orchestrator.executor import executor_named

    status = campaign_status(store, name)
    live = [t.element for t in status.tasks if t.status in ("running", "pending") and t.element]
    return {"campaign": name, **executor_named(status.campaign.executor).cancel(live)}
