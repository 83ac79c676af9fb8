"""Campaigns: one YAML spec -> every measurement of a grid, on Slurm or here.

    spec.py    the spec (pydantic; errors name the field path)
    plan.py    spec x a node's wiring -> tasks on exact GPUs, and what was skipped and why
    submit.py  tasks -> bundles -> submitit job arrays (or runs here)
    bundle.py  what an array element runs on the compute node
    folder.py  the campaign folder both sides read and write
    track.py   status, collect, resume

The flows the CLI calls are below; each takes a Store and plain values and returns data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from wirewise.errors import UserError

if TYPE_CHECKING:  # the package is imported by every campaign command: keep it light
    from wirewise.orchestrator.campaign.plan import Plan
    from wirewise.orchestrator.campaign.spec import CampaignSpec
    from wirewise.topology import Topology


def target_topology(spec: CampaignSpec, topology_file: str | None, node: str | None, db: str | None) -> Topology | None:
    """The wiring to plan on: a saved `nvidia-smi topo -m`, a stored node, the stored wiring
    the spec's target.fingerprint names, or (local executor) this machine; None: no GPU here,
    so CPU ranks."""
    from wirewise.topology import read_topology

    if topology_file and node:
        raise UserError("give --topology-file or --node, not both")
    if topology_file:
        return read_topology(topology_file)
    if node or spec.target.fingerprint:
        from wirewise.orchestrator.store import Store
        from wirewise.orchestrator.store.topology import load_topology

        return load_topology(Store(db), node=node, fingerprint=None if node else spec.target.fingerprint)
    if spec.target.executor == "slurm":
        raise UserError("which nodes does this campaign run on? Plan on their wiring: --topology-file FILE "
                        "(`nvidia-smi topo -m` of one), --node NAME (stored with `topo save`), or target.fingerprint")
    try:
        return read_topology(None)
    except UserError:
        return None  # no GPU or driver here: CPU ranks


def plan_spec(spec_path: str, topology_file: str | None = None, node: str | None = None, db: str | None = None,
              name: str | None = None, gpus: list[int] | None = None) -> tuple[CampaignSpec, Plan]:
    """Load a spec (under another name, or on other GPU counts, when given) and plan it."""
    from wirewise.orchestrator.campaign.plan import plan_campaign
    from wirewise.orchestrator.campaign.spec import load_spec

    spec = load_spec(spec_path)
    if name is not None or gpus is not None:
        spec = spec.overridden(name, gpus)
    return spec, plan_campaign(spec, target_topology(spec, topology_file, node, db))


def campaign_folder(spec: CampaignSpec) -> Path:
    from wirewise.orchestrator.run.folders import runs_root

    folder = Path(spec.target.folder) if spec.target.folder else runs_root() / "campaigns" / spec.name
    return folder.expanduser().resolve()


def submission_for(spec: CampaignSpec, gpus_per_node: int | None, runs, executor: str, dry_run: bool = False):
    """The bundles and arrays for these runs. A dry run off the cluster (no Slurm to ask for
    MaxArraySize) assumes Slurm's default and says so in the submission's parameters."""
    from wirewise.orchestrator.campaign.submit import prepare

    target = spec.target.model_copy(update={"executor": executor})
    max_array = None
    if executor == "slurm":
        from wirewise.orchestrator.slurm.cluster import DEFAULT_MAX_ARRAY_SIZE, max_array_size

        try:
            max_array = max_array_size()
        except UserError:
            if not dry_run:
                raise
            max_array = DEFAULT_MAX_ARRAY_SIZE
    submission = prepare(runs, target, spec.name, gpus_per_node, max_array)
    if max_array:
        submission.max_array_size = max_array
    return submission


def submit_spec(store, spec: CampaignSpec, plan: Plan, executor: str, on_task=None) -> dict[str, Any]:
    """Record the campaign and its tasks, write its folder, submit (Slurm) or run (local).
    The folder is claimed right after the record (a name taken is said first): when it cannot
    be (not empty, not creatable), the record goes again and the folder is as it was."""
    from wirewise.orchestrator.campaign.folder import write_campaign
    from wirewise.orchestrator.store.campaigns import create_campaign, forget_campaign

    if not plan.tasks:
        raise UserError(f"campaign {spec.name!r} has no task to run: every combination was skipped (see `campaign plan`)")
    gpus = plan.topology.gpus if plan.topology is not None else None
    submission = submission_for(spec, gpus, [(t.spec.task_id, 1) for t in plan.tasks], executor)
    root = campaign_folder(spec)
    doc = spec.model_dump(mode="json", exclude_unset=True)
    create_campaign(store, spec.name, doc, str(root), executor, plan.tasks)
    try:
        write_campaign(root, spec.name, doc, plan.to_json(), [task.spec for task in plan.tasks])
    except BaseException:
        forget_campaign(store, spec.name)
        raise
    return dispatch(store, spec.name, submission, root, executor, on_task)


def dispatch(store, name: str, submission, root: Path, executor: str, on_task=None) -> dict[str, Any]:
    """Send a submission's bundles on their way and record where each task went; the local
    executor runs them here, then collects."""
    from wirewise.orchestrator.campaign.submit import run_here, submit_to_slurm
    from wirewise.orchestrator.campaign.track import LOCAL_PID, collect_campaign
    from wirewise.orchestrator.store.campaigns import set_submitted

    if executor == "slurm":
        elements = submit_to_slurm(submission, root)
        arrays = sorted({element.split("_")[0] for element in elements.values()})
        set_submitted(store, name, {tid: (i, elements[i]) for i, b in enumerate(submission.bundles) for tid, _ in b}, arrays)
        return {"campaign": name, "executor": executor, "folder": str(root), "arrays": arrays, **submission.to_json()}
    set_submitted(store, name, {tid: (i, None) for i, b in enumerate(submission.bundles) for tid, _ in b}, [])
    pid_file = root / LOCAL_PID
    pid_file.write_text(str(os.getpid()))
    try:
        ran = run_here(submission, root, on_task)
    finally:
        pid_file.unlink(missing_ok=True)
    collected, status = collect_campaign(store, name)
    return {"campaign": name, "executor": executor, "folder": str(root), "ran": len(ran),
            "stored_records": collected.new, "counts": status.counts, "interrupted": "cancelled" in ran.values(),
            **submission.to_json()}


def resume_campaign(store, name: str, include_oom: bool, max_attempts: int, on_task=None) -> dict[str, Any]:
    """Submit again exactly the tasks that are missing, failed, cancelled or timed out (and oom
    when asked), each as its next attempt, up to max_attempts runs per task."""
    from wirewise.orchestrator.campaign.folder import missing_task_specs, read_plan_node
    from wirewise.orchestrator.campaign.spec import parse_spec
    from wirewise.orchestrator.campaign.track import collect_campaign, to_retry
    from wirewise.orchestrator.store.campaigns import set_statuses

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
    submission = submission_for(spec, node.get("gpus"), retry, info.executor)
    set_statuses(store, {tid: "pending" for tid, _ in retry}, {tid: attempt for tid, attempt in retry})
    return {**summary, **dispatch(store, name, submission, Path(info.folder), info.executor, on_task)}


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
    """scancel every array of the campaign still in Slurm, or stop the local run."""
    import signal

    from wirewise.orchestrator.campaign.folder import CampaignFolder
    from wirewise.orchestrator.campaign.track import LOCAL_PID, campaign_status

    status = campaign_status(store, name)
    info = status.campaign
    if info.executor == "slurm":
        from wirewise.orchestrator.slurm.cluster import cancel

        live = sorted({t.element.split("_")[0] for t in status.tasks if t.status in ("running", "pending") and t.element})
        cancel(live)
        return {"campaign": name, "cancelled_arrays": live}
    pid_file = CampaignFolder(Path(info.folder)).root / LOCAL_PID
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return {"campaign": name, "cancelled_arrays": [], "note": "no local run is going"}
    return {"campaign": name, "stopped_local_run": pid}
