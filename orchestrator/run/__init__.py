"""Stage "user job": a person's own command (`wirewise run`), placed on the node's wiring,
advised, submitted through the Slurm executor and recorded with the placement it got.

Two ways to share a node with Slurm:
- whole node (`--whole-node`): the job holds every GPU of the node (--exclusive), and the
  command sees only the chosen set through CUDA_VISIBLE_DEVICES;
- shared (default): Slurm picks K GPUs on a node whose features name the right fabric (the
  `--constraint` that `wirewise topo slurm` suggests); once the job starts, the GPUs Slurm gave
  are read back (`scontrol show job -d`), predicted next to the best free set, and a warning
  says when they are worse.
Either way the advised strategy is exported as WIREWISE_STRATEGY (given --model), and the job
is kept off the nodes placement avoids (flagged by pair tests, drained, or with an open finding
of the health rules: decide.nodes_measured) with `--exclude`, or warned about when `--node`
names one; on the named node, GPUs an open finding names are left out of the placement. The command
goes to submitit as an argument list (command.CommandInJob), never through a shell; every
option that reaches the batch script is checked first (command.RunRequest).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from wirewise.errors import UserError
from wirewise.orchestrator.executor import SLURM
from wirewise.settings import STRATEGY
from wirewise.orchestrator.run.command import RUN_LABELS, CommandInJob, RunRequest

START_POLL_S = 0.5
# What to change when Slurm refuses the job, in the options' terms.
REFUSED_RUN = "change --gpus, --node, -p/--partition or -t/--time (or drop --whole-node); nothing was recorded"

__all__ = ["RunRequest", "run_for"]


def run_for(request: RunRequest, topology_file: Path | None, db: str | None, gpu_mem_gb: float | None = None,
            gpu_name: str | None = None) -> dict:
    """The `wirewise run --json` object: place on the node's wiring (a whole-node job may use
    any GPU; a shared one compares against the GPUs free now), advise, submit, record."""
    from wirewise.orchestrator.decide import free_gpus, place_on, placement_wiring
    from wirewise.orchestrator.placement.history import History
    from wirewise.orchestrator.store import Store

    if not request.command:
        raise UserError("give the command to run after `--`, e.g. wirewise run --gpus 2 -- python train.py")
    if request.nodes > 1:
        return run_across_nodes(request, topology_file, db)
    node = request.node
    topo, live, _, _ = placement_wiring(topology_file, node, Store.open_existing(db), gpu_name)
    store = Store(db)  # the job is recorded: create the database once the request is sound
    free_list, free_source = (
        (list(range(topo.gpus)), "the whole node") if request.whole_node else free_gpus(topo.gpus, None, node, live)
    )
    history = History(store, topo)  # read once: for the placement, its advice and the GPUs Slurm gives
    placement = place_on(topo, request.gpus, "packed", free_list, free_source, store, node, model=request.model,
                         gpu_mem_gb=gpu_mem_gb, history=history)
    avoid, warnings = nodes_to_avoid(request, store)
    result = submit_command(request, topo, placement, placement.get("strategy"), store, history, avoid)
    result["warnings"] = warnings + result["warnings"]
    result["reasons"] = placement["reasons"]
    return result


def run_across_nodes(request: RunRequest, topology_file: Path | None, db: str | None) -> dict:
    """`wirewise run --nodes N --json`: N stored nodes of one wiring with --gpus GPUs on each, as
    `place --across-nodes` chooses them (wirewise.orchestrator.decide.placement_across_nodes:
    inside one NVLink domain when one has room, else said), kept there by Slurm: `--segment=N`
    where the cluster runs a block topology with a block that holds N nodes (Slurm then picks
    free nodes inside one block; the nodes placement avoids are excluded), else the chosen nodes
    by name. Once the job holds its nodes, what Slurm gave is checked against what was asked
    (allocation_check): a segment Slurm did not keep, nodes other than those named, or nodes
    outside the domain promised are warnings, never silent."""
    from wirewise.jobenv import hostlist
    from wirewise.orchestrator.decide import placement_across_nodes
    from wirewise.orchestrator.slurm.blocks import cluster_blocks, segment_for
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import load_topology, node_domains

    if topology_file is not None:
        raise UserError("--topology-file describes one node: with --nodes, each node's wiring comes from the store "
                        "(`wirewise topo save` on each node)")
    placed = placement_across_nodes(request.gpus * request.nodes, db, per_node=request.gpus)
    chosen = [row["node"] for row in placed["nodes"]]
    store = Store(db)
    topo = load_topology(store, node=chosen[0])
    domain = placed["nvlink_domain"]
    segment = segment_for(request.nodes, cluster_blocks()) if domain else None
    avoid = nodes_to_avoid(request, store)[0] if segment else {}
    nodelist = None if segment else hostlist(chosen)
    job_id = _submit(request, job_request(request, topo, ",".join(avoid) or None, nodelist, segment), {}, None)
    result = {
        "job_id": job_id, "mode": "whole-node" if request.whole_node else "shared", "node": None, "command": list(request.command),
        "nodes": chosen, "per_node": request.gpus, "nvlink_domain": domain, "asked": f"--segment={segment}" if segment else f"--nodelist={nodelist}",
        "fingerprint": topo.fingerprint, "strategy": None, "folder": str(request.folder), "excluded": sorted(avoid),
        "reasons": placed["reasons"], "warnings": [r for r in placed["reasons"] if r.startswith("no NVLink domain")],
        "gpus": None, "cuda_visible_devices": None, "constraint": None, "predicted_busbw_gbs": placed["predicted_busbw_gbs"],
        "basis": "model" if placed["predicted_busbw_gbs"] is not None else None,
    }
    given, problems = allocation_check(job_id, chosen, segment, domain, node_domains(store), request.start_timeout_s)
    result["given_nodes"] = given
    result["allocation"] = "not known yet" if given is None else "not as asked" if problems else "as asked"
    result["warnings"] += problems
    result["record_id"] = record(store, {**result, "node": hostlist(given or chosen)}, request, topo,
                                 {"gpus": None, "predicted_busbw_gbs": placed["predicted_busbw_gbs"]})
    return result


def allocation_check(job_id: str, asked: list[str], segment: int | None, domain: dict | None,
                     domains: dict, timeout_s: float) -> tuple[list[str] | None, list[str]]:
    """(the nodes Slurm gave the job, waiting up to `timeout_s` for it to start; what is not as
    asked): a --segment Slurm did not keep inside one block, nodes other than those named, nodes
    outside the NVLink domain the placement promised (`domains`: each stored node's)."""
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.slurm.blocks import job_nodes

    deadline = time.monotonic() + timeout_s
    given = job_nodes(job_id)
    while given is None and time.monotonic() < deadline:
        time.sleep(START_POLL_S)
        given = job_nodes(job_id)
    if given is None:
        return None, [f"job {job_id} had not started after {timeout_s:g} s: the nodes Slurm gives it are not checked"]
    problems = list(executor_named(SLURM).allocation_problems([job_id]).values()) if segment else []
    if not segment and sorted(given) != sorted(asked):
        problems.append(f"job {job_id} asked for {', '.join(asked)} and Slurm gave {', '.join(given)}")
    if domain is not None:
        key = (domain["cluster_uuid"], domain["clique_id"])
        outside = [node for node in given if domains.get(node) != key]
        if outside:
            problems.append(f"job {job_id} holds {', '.join(outside)} outside the NVLink domain {key[0]} clique {key[1]}: "
                            "its traffic between those nodes goes over the network")
    return given, problems


def nodes_to_avoid(request: RunRequest, store) -> tuple[dict[str, str], list[str]]:
    """({node: why} the job is kept off, warnings): the nodes placement avoids that Slurm has in
    the job's partition (--exclude may name no node Slurm does not know); with --node naming one
    of them, a warning instead. One `sinfo -N` (of the partition, or of --node) gives both the
    nodes' states that placement avoids and the names Slurm knows."""
    from wirewise.orchestrator.decide import nodes_measured
    from wirewise.orchestrator.slurm.nodes import states_if_slurm

    if request.node:
        why = nodes_measured(store, [request.node], slurm_nodes=states_if_slurm([request.node])).avoid.get(request.node)
        return {}, [f"--node {request.node} is one placement avoids: {why}"] if why else []
    known = states_if_slurm(partition=request.partition)
    avoid = nodes_measured(store, slurm_nodes=known).avoid
    return {node: why for node, why in avoid.items() if node in known}, []


def submit_command(request: RunRequest, topo, placement: dict, strategy: str | None, store, history,
                   avoid: dict[str, str] | None = None) -> dict:
    """Submit (kept off `avoid`), (shared) read back the GPUs Slurm gave and predict them from
    `history` (the History the placement was made with), record. Returns the `run --json`
    object."""
    env = {STRATEGY.name: strategy} if strategy else {}
    pin = placement["gpus"] if request.whole_node else None
    result = {
        "job_id": _submit(request, job_request(request, topo, ",".join(avoid or {}) or None), env, pin),
        "mode": "whole-node" if request.whole_node else "shared",
        "node": request.node,
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
        "excluded": sorted(avoid or {}),
        "warnings": [],
    }
    if not request.whole_node:
        result.update(_given_by_slurm(result["job_id"], request.node, topo, placement, history, request.start_timeout_s))
    result["record_id"] = record(store, result, request, topo, placement)
    return result


def _submit(request: RunRequest, job, env: dict[str, str], pin: list[int] | None) -> str:
    """The command submitted as `job` (a JobRequest); its Slurm job id. A refusal is one line, exit 2."""
    from wirewise.orchestrator.executor import executor_named
    from wirewise.orchestrator.executor.core import SubmissionRefused

    try:
        submitted = executor_named(SLURM).submit(job, CommandInJob(list(request.command), os.getcwd(), env, pin), [()])
    except SubmissionRefused as exc:
        raise UserError(f"{exc}; {REFUSED_RUN}") from None
    return submitted.elements[0]


def job_request(request: RunRequest, topo, exclude: str | None = None, nodelist: str | None = None,
                segment: int | None = None):
    """The whole node (every GPU allocated: --exclusive alone leaves CUDA_VISIBLE_DEVICES unset,
    and all its memory), or K GPUs on a node of the fabric; never on the nodes `exclude` lists.
    Across nodes (--nodes N): N nodes, K GPUs on each, named (`nodelist`) or kept in one block
    (`segment`); the nodes were chosen by wiring, so no fabric feature is asked."""
    from wirewise.orchestrator.executor.core import JobRequest

    across = request.nodes > 1
    return JobRequest(
        folder=request.job_folder, name="wirewise-run", time_min=request.time_min, cpus_per_task=request.cpus_per_task,
        partition=request.partition, nodelist=nodelist or request.node, exclude=exclude, whole_node=request.whole_node,
        gpus_per_node=topo.gpus if request.whole_node else request.gpus, nodes=request.nodes, segment=segment,
        constraint=None if request.whole_node or across else topo.fabric, labels=RUN_LABELS,
    )


def _given_by_slurm(job_id: str, node: str | None, topo, placement: dict, history, timeout_s: float) -> dict:
    """Wait for the job to hold its GPUs; predict them (from the placement's `history`) next to
    the best free set."""
    from wirewise.orchestrator.placement.history import predictor
    from wirewise.orchestrator.slurm.nodes import job_gpus

    deadline = time.monotonic() + timeout_s
    given = job_gpus(job_id, node)
    while given is None and time.monotonic() < deadline:
        time.sleep(START_POLL_S)
        given = job_gpus(job_id, node)
    if given is None:
        return {"warnings": [f"job {job_id} had not started after {timeout_s:g} s: its GPUs are not known yet"]}
    if len(given) != len(placement["gpus"]) or max(given) >= topo.gpus:
        return {"gpus": given, "warnings": [f"Slurm gave GPUs {given}, which do not match this node's wiring"]}
    prediction = predictor(topo, history).predict(given)
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
    from wirewise.orchestrator.store.placed_jobs import record_placed_job

    return record_placed_job(
        store, slurm_job_id=result["job_id"], mode=result["mode"], command=result["command"], node=result["node"],
        requested_gpus=request.gpus, gpus=result["gpus"], fingerprint=topo.fingerprint, fabric=topo.fabric,
        constraint=result["constraint"], predicted_busbw_gbs=result["predicted_busbw_gbs"], basis=result["basis"],
        best_free_gpus=placement["gpus"], best_free_busbw_gbs=placement["predicted_busbw_gbs"],
        model=request.model, strategy=result["strategy"], warnings=result["warnings"], folder=str(request.folder),
    )
